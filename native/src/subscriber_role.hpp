// A subscriber: answers handshakes, echoes pings (when it is the echoing one), counts the bursts of
// a throughput test and reports on them when asked, leaves on the publisher's end marker or when the
// publisher disappears.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "endpoints.hpp"
#include "latency_sample.hpp"
#include "options.hpp"
#include "plain_sample.hpp"

namespace perfgate {

class SubscriberState : public MatchMonitor
{
public:
    void handshake_seen();
    void end_seen();

    enum class Outcome { end_marker, handshake, failure, timeout };
    // Waits for the first handshake (or the end, or a failure) until the deadline.
    Outcome wait_for_handshake(std::chrono::steady_clock::time_point deadline);
    // Waits, without deadline, for the end marker or a failure.
    Outcome wait_for_end();
    // Whether the end marker was taken by the deadline (false sooner on a failure).
    bool end_seen_by(std::chrono::steady_clock::time_point deadline);

private:
    bool handshake_ = false;
    bool end_ = false;
};

class PingListener : public ReaderListenerBase
{
public:
    PingListener(SubscriberState& state, uint32_t subscriber_index, bool echo, uint32_t echo_delay_ns,
            const SampleIO& io);
    void set_pong_writer(compat::dds::DataWriter& writer) { pong_writer_ = &writer; }
    void on_data_available(compat::dds::DataReader* reader) override;

private:
    void take_all(compat::dds::DataReader& reader);

    SubscriberState& state_;
    const uint32_t subscriber_index_;
    const bool echo_;
    const std::chrono::nanoseconds echo_delay_;
    const SampleIO io_;
    compat::dds::DataWriter* pong_writer_ = nullptr;
    std::mutex take_mutex_;  // TCP may deliver from several receive threads at once
    LatencySample sample_;   // reused: no allocation per sample on the measured path
    // Throughput: the test being counted (its index), its samples so far, when it started (from
    // the publisher) and when its last sample arrived, steady clock in ns.
    uint32_t counted_test_ = UINT32_MAX;
    uint64_t received_ = 0;
    int64_t test_start_ns_ = 0;
    int64_t last_arrival_ns_ = 0;
};

class SubscriberRole
{
public:
    // A stop request (SIGTERM, SIGINT) ends run() with a RunError.
    SubscriberRole(const LatencyOptions& options, uint32_t subscriber_index, bool echo,
            const std::string& participant_name, StopRequest& stop);

    // Returns once the publisher sent its end marker; throws RunError on a discovery timeout,
    // a lost publisher or incompatible QoS. announce("matched") once the handshake arrived.
    void run(const std::function<void(const std::string&)>& announce);
    // Waits up to `limit` for our listener to take the end marker (one process running both roles:
    // the publisher must outlive that, see both_role.cpp).
    void await_end_marker(std::chrono::milliseconds limit) { state_.end_seen_by(std::chrono::steady_clock::now() + limit); }

private:
    std::unique_ptr<Endpoints> create_endpoints();
    // The first handshake, creating the participant again while a TCP connection found nothing.
    SubscriberState::Outcome wait_for_handshake(std::chrono::steady_clock::time_point deadline);

    const LatencyOptions& options_;
    const uint32_t subscriber_index_;
    const std::string participant_name_;
    SubscriberState state_;
    StopRequest::Subscription stop_subscription_;  // after state_, which it interrupts
    WriterListener writer_listener_;
    PingListener ping_listener_;
    std::unique_ptr<Endpoints> endpoints_;  // last: destroyed first, before the listeners it calls
};

}  // namespace perfgate
