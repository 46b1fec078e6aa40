// StopRequest: SIGTERM and SIGINT sent to this very process reach the subscribers, once.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

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

// A harness whose perfgate was killed wrote to its dead parent's pipe and died of SIGPIPE before
// deleting its participants, leaving their files in /dev/shm: the write must fail instead.
TEST(StopWhenParentDies, AWriteToAClosedPipeFailsInsteadOfKilling)
{
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)  // the process-wide settings of a harness, here only
    {
        stop_when_parent_dies();
        int ends[2];
        if (::pipe(ends) != 0)
        {
            ::_exit(2);
        }
        ::close(ends[0]);
        const bool failed_with_epipe = ::write(ends[1], "x", 1) == -1 && errno == EPIPE;
        ::_exit(failed_with_epipe ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace perfgate
