// The publisher: sends pings, times the pongs of the echoing subscriber, keeps the measurements.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "endpoints.hpp"
#include "latency_sample.hpp"
#include "measurements.hpp"
#include "options.hpp"
#include "plain_sample.hpp"
#include "turns.hpp"

namespace perfgate {

// What the pong listener hands to the measuring thread, under the monitor's lock.
class PublisherState : public MatchMonitor
{
public:
    // Arms the wait for the pong of `seq`; pongs of any other sequence number are discarded.
    void expect(uint32_t seq);
    // Called by the listener: true if it was the expected pong.
    bool pong_received(uint32_t seq, std::chrono::steady_clock::time_point when);
    void handshake_answered(uint32_t subscriber_index);
    // Throughput: a subscriber's report on test `test` (received samples, subscription time).
    void report_received(uint32_t subscriber_index, uint32_t test, uint64_t received, int64_t subscription_ns);

    // Waits for the armed pong; returns its arrival time, or nothing at the deadline or a failure (a pong
    // that arrived after the deadline counts as none).
    bool wait_for_pong(std::chrono::steady_clock::time_point deadline, std::chrono::steady_clock::time_point& arrival);
    bool wait_for_handshakes(uint32_t subscribers, std::chrono::steady_clock::time_point deadline);
    std::size_t handshakes() const;
    // Waits until every subscriber reported on `test`; false at the deadline or on a failure.
    bool wait_for_reports(uint32_t test, uint32_t subscribers, std::chrono::steady_clock::time_point deadline);
    // The reports on `test`: subscriber index -> (received, subscription time in ns).
    std::map<uint32_t, std::pair<uint64_t, int64_t>> reports(uint32_t test) const;

private:
    uint32_t expected_seq_ = 0;
    bool pong_arrived_ = false;
    std::chrono::steady_clock::time_point arrival_;
    std::set<uint32_t> answered_;
    uint32_t report_test_ = 0;
    std::map<uint32_t, std::pair<uint64_t, int64_t>> reports_;  // of test report_test_
};

// Shared by the latency and throughput publishers. Waits until every subscriber matched and
// answered a handshake; throws RunError on a timeout or failure.
void handshake_with_subscribers(const LatencyOptions& options, PublisherState& state,
        compat::dds::DataWriter& writer, uint32_t& next_seq);
// Tells subscribers to leave; reliable: waits (a while) for their acknowledgements.
void send_end_marker(const LatencyOptions& options, PublisherState& state, compat::dds::DataWriter& writer,
        uint32_t& next_seq);
// The RunError for the failure the state reports; `where` says what we were doing.
[[noreturn]] void throw_failure(const PublisherState& state, const std::string& where);

class PongListener : public ReaderListenerBase
{
public:
    PongListener(PublisherState& state, const SampleIO& io);
    void on_data_available(compat::dds::DataReader* reader) override;

private:
    PublisherState& state_;
    const SampleIO io_;
    std::mutex take_mutex_;  // TCP may deliver from several receive threads at once
    LatencySample sample_;   // reused: no allocation per sample on the measured path
};

class PublisherRole
{
public:
    // A stop request (SIGTERM, SIGINT) ends whatever run() waits for.
    PublisherRole(const LatencyOptions& options, const std::string& participant_name, StopRequest& stop);

    // Waits for matching in both directions, measures every payload (announcing each one done),
    // tells subscribers to leave. Throws RunError when it cannot finish; what was measured stays
    // in results(). When stopped, results() holds only the payloads measured completely and the
    // error is kInterruptedBySignal.
    void run(const std::function<void(const std::string&)>& announce);

    const std::vector<PayloadResult>& results() const { return results_; }

    // The raw CSV and JSON report (when asked for) and the table on stdout; `error` is empty
    // for a complete run. Throws std::runtime_error when a file cannot be written.
    void write_outputs(const std::string& error) const;

private:
    PayloadResult measure(uint32_t payload);
    // Before round trip `i` of a payload: ends our turn and waits for the next one where a turn
    // ends (after the warm-up, then every turn_samples recorded round trips).
    void take_turn_before(uint32_t i);
    // One round trip; false when no pong arrived within the sample timeout.
    bool round_trip(double& latency_us);

    const LatencyOptions& options_;
    const SampleIO io_;  // loans of plain samples, or not
    PublisherState state_;
    StopRequest::Subscription stop_subscription_;  // after state_, which it interrupts
    WriterListener writer_listener_;
    PongListener pong_listener_;
    LatencySample ping_;
    uint32_t next_seq_ = 1;
    bool matched_ = false;
    std::vector<PayloadResult> results_;
    TurnTaking turns_;
    Endpoints endpoints_;  // last: destroyed first, before the listeners it calls
};

}  // namespace perfgate
