// StopRequest: SIGTERM and SIGINT sent to this very process reach the subscribers, once.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "stop_request.hpp"

namespace perfgate {
namespace {

using namespace std::chrono_literals;

// Waits for the watcher thread to have acted on a signal.
bool wait_until_requested(const StopRequest& stop)
{
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!stop.requested() && std::chrono::steady_clock::now() < deadline)
    {
        std::this_thread::sleep_for(1ms);
    }
    return stop.requested();
}

TEST(StopRequest, NothingIsRequestedWithoutASignal)
{
    StopRequest stop;
    std::atomic<int> calls{0};
    auto subscription = stop.subscribe([&]() { ++calls; });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(stop.requested());
    EXPECT_EQ(calls.load(), 0);
}

TEST(StopRequest, SigtermCallsEverySubscriberOnce)
{
    StopRequest stop;
    std::atomic<int> first{0};
    std::atomic<int> second{0};
    auto one = stop.subscribe([&]() { ++first; });
    auto two = stop.subscribe([&]() { ++second; });
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);  // blocked in this thread: only the watcher takes it
    ASSERT_TRUE(wait_until_requested(stop));
    ASSERT_EQ(::kill(::getpid(), SIGINT), 0);  // a second signal changes nothing
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(first.load(), 1);
    EXPECT_EQ(second.load(), 1);
}

TEST(StopRequest, SigintToo)
{
    StopRequest stop;
    std::promise<void> called;
    auto subscription = stop.subscribe([&]() { called.set_value(); });
    ASSERT_EQ(::kill(::getpid(), SIGINT), 0);
    EXPECT_EQ(called.get_future().wait_for(5s), std::future_status::ready);
}

TEST(StopRequest, ASubscriberAfterTheSignalIsCalledAtOnce)
{
    StopRequest stop;
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    ASSERT_TRUE(wait_until_requested(stop));
    int calls = 0;
    auto subscription = stop.subscribe([&]() { ++calls; });
    EXPECT_EQ(calls, 1);
}

TEST(StopRequest, AnEndedSubscriptionIsNotCalled)
{
    StopRequest stop;
    std::atomic<int> calls{0};
    {
        auto subscription = stop.subscribe([&]() { ++calls; });
    }
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    ASSERT_TRUE(wait_until_requested(stop));
    EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace perfgate
