// SubscriberState::end_seen_by: how one process running both roles knows that its subscribers took the
// publisher's end marker before the publisher goes (both_role.cpp).
#include "subscriber_role.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SubscriberState, AnEndMarkerTakenLaterIsWaitedFor)
{
    SubscriberState state;
    state.handshake_seen();
    std::thread listener([&state]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // still echoing the pings before it
        state.end_seen();
    });
    EXPECT_TRUE(state.end_seen_by(Clock::now() + std::chrono::hours(1)));  // waiting the hour would hang the test
    listener.join();
    EXPECT_EQ(state.wait_for_end(), SubscriberState::Outcome::end_marker);
}

TEST(SubscriberState, NoEndMarkerByTheDeadlineIsSaid)
{
    SubscriberState state;
    state.handshake_seen();
    EXPECT_FALSE(state.end_seen_by(Clock::now() + std::chrono::milliseconds(20)));
}

TEST(SubscriberState, AFailureEndsTheWaitAtOnce)
{
    SubscriberState state;
    state.incompatible_qos("incompatible QoS: RELIABILITY");
    EXPECT_FALSE(state.end_seen_by(Clock::now() + std::chrono::hours(1)));  // waiting would hang the test
    EXPECT_EQ(state.wait_for_end(), SubscriberState::Outcome::failure);
}

}  // namespace
}  // namespace perfgate
