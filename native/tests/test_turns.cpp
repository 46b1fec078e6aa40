// Turn taking through a real socket pair: strict alternation, a partner that ends, a stop request.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "endpoints.hpp"
#include "stop_request.hpp"
#include "turns.hpp"

namespace perfgate {
namespace {

struct SocketPair
{
    int first = -1;
    int second = -1;
    SocketPair()
    {
        int ends[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
        first = ends[0];
        second = ends[1];
    }
};

bool never() { return false; }

TEST(TurnTaking, TwoSidesAlternateStrictly)
{
    SocketPair pair;
    std::vector<char> order;
    std::mutex order_mutex;
    const char token = 't';
    ASSERT_EQ(::send(pair.second, &token, 1, 0), 1);  // the first turn, as the supervisor gives it
    // Each side closes its end when done: the last turn passed to a finished side must not
    // raise SIGPIPE (which would end this test program).
    auto side = [&](char name, int socket) {
        TurnTaking turns(socket);
        for (int turn = 0; turn < 5; ++turn)
        {
            turns.wait(never);
            {
                std::lock_guard<std::mutex> lock(order_mutex);
                order.push_back(name);
            }
            turns.pass();
        }
    };
    std::thread first(side, 'a', pair.first);
    std::thread second(side, 'b', pair.second);
    first.join();
    second.join();
    EXPECT_EQ(std::string(order.begin(), order.end()), "ababababab");
}

TEST(TurnTaking, APartnerThatEndedIsAnError)
{
    SocketPair pair;
    ::close(pair.second);  // the partner's end: it exited without passing the turn
    TurnTaking turns(pair.first);
    try
    {
        turns.wait(never);
        FAIL() << "wait returned without a turn";
    }
    catch (const RunError& error)
    {
        EXPECT_NE(std::string(error.what()).find("ended before passing the turn"), std::string::npos) << error.what();
    }
}

TEST(TurnTaking, AStopRequestEndsTheWait)
{
    SocketPair pair;
    std::atomic<bool> stop{false};
    std::thread stopper([&]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        stop = true;
    });
    TurnTaking turns(pair.first);
    try
    {
        turns.wait([&]() { return stop.load(); });
        FAIL() << "wait returned without a turn";
    }
    catch (const RunError& error)
    {
        EXPECT_EQ(std::string(error.what()), kInterruptedBySignal);
    }
    stopper.join();
    ::close(pair.second);
}

TEST(TurnTaking, AloneItNeverWaits)
{
    TurnTaking turns(-1);
    EXPECT_FALSE(turns.enabled());
    turns.wait(never);
    turns.pass();
}

}  // namespace
}  // namespace perfgate
