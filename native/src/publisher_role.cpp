#include "publisher_role.hpp"

#include "throughput_results.hpp"

#include <iostream>
#include <thread>

namespace perfgate {
namespace dds = compat::dds;
using Clock = std::chrono::steady_clock;

namespace {

// Give up on a peer that answered none of this many consecutive pings: a subscriber killed
// without a goodbye is only unmatched after the participant lease (20 s by default).
constexpr uint32_t kMaxConsecutiveLost = 20;
constexpr auto kHandshakePeriod = std::chrono::milliseconds(50);
// Reliable end marker: up to 2 s for the subscribers' acknowledgements, 100 ms at a time.
constexpr int kEndAcknowledgementSlices = 20;
constexpr uint32_t kEndAcknowledgementSliceNs = 100000000;

}  // namespace

void PublisherState::expect(uint32_t seq)
{
    std::lock_guard<std::mutex> lock(mutex_);
    expected_seq_ = seq;
    pong_arrived_ = false;
}

bool PublisherState::pong_received(uint32_t seq, Clock::time_point when)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (seq != expected_seq_ || pong_arrived_)
        {
            return false;  // late pong of a sample already counted as lost
        }
        pong_arrived_ = true;
        arrival_ = when;
    }
    changed_.notify_all();
    return true;
}

void PublisherState::handshake_answered(uint32_t subscriber_index)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        answered_.insert(subscriber_index);
    }
    changed_.notify_all();
}

void PublisherState::report_received(uint32_t subscriber_index, uint32_t test, uint64_t received,
        int64_t subscription_ns)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (test != report_test_)
        {
            if (test < report_test_)
            {
                return;  // a late copy answering an earlier request
            }
            report_test_ = test;
            reports_.clear();
        }
        reports_[subscriber_index] = {received, subscription_ns};
    }
    changed_.notify_all();
}

bool PublisherState::wait_for_reports(uint32_t test, uint32_t subscribers, Clock::time_point deadline)
{
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, deadline, [&]() {
        return (report_test_ == test && reports_.size() >= subscribers) || !failure_.empty();
    }) && failure_.empty();
}

std::map<uint32_t, std::pair<uint64_t, int64_t>> PublisherState::reports(uint32_t test) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return report_test_ == test ? reports_ : std::map<uint32_t, std::pair<uint64_t, int64_t>>();
}

bool PublisherState::wait_for_pong(Clock::time_point deadline, Clock::time_point& arrival)
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [this]() { return pong_arrived_ || !failure_.empty(); });
    // A pong after the deadline is lost even when we look only later (descheduled in write() or
    // before the wait on a loaded machine): lost means no pong within the sample timeout.
    if (!pong_arrived_ || arrival_ > deadline)
    {
        return false;
    }
    arrival = arrival_;
    return true;
}

bool PublisherState::wait_for_handshakes(uint32_t subscribers, Clock::time_point deadline)
{
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, deadline, [&]() { return answered_.size() >= subscribers || !failure_.empty(); }) &&
           failure_.empty();
}

std::size_t PublisherState::handshakes() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return answered_.size();
}

PongListener::PongListener(PublisherState& state, const SampleIO& io)
    : ReaderListenerBase(state)
    , state_(state)
    , io_(io)
{
}

void PongListener::on_data_available(dds::DataReader* reader)
{
    std::lock_guard<std::mutex> lock(take_mutex_);
    dds::SampleInfo info;
    while (take_sample_from(*reader, sample_, info, io_))
    {
        // The arrival time is taken here, in the listener, before any thread switch.
        const auto arrival = Clock::now();
        if (!info.valid_data)
        {
            continue;
        }
        if (sample_.kind == SampleKind::ping)
        {
            state_.pong_received(sample_.seq, arrival);
        }
        else if (sample_.kind == SampleKind::handshake)
        {
            state_.handshake_answered(sample_.origin);
        }
        else if (sample_.kind == SampleKind::report)
        {
            uint64_t received = 0;
            int64_t subscription_ns = 0;
            if (decode_report(sample_.data, received, subscription_ns))
            {
                state_.report_received(sample_.origin, sample_.seq, received, subscription_ns);
            }
        }
    }
}

PublisherRole::PublisherRole(const LatencyOptions& options, const std::string& participant_name, StopRequest& stop)
    : options_(options)
    , io_(sample_io(options))
    , stop_subscription_(stop.subscribe([this]() { state_.interrupt(); }))
    , writer_listener_(state_)
    , pong_listener_(state_, sample_io(options))
    , turns_(options.turn_socket)
    , endpoints_(options, Side::publisher, 0, participant_name, writer_listener_, pong_listener_,
              [](dds::DataWriter&) {})
{
}

void PublisherRole::run(const std::function<void(const std::string&)>& announce)
{
    handshake_with_subscribers(options_, state_, endpoints_.writer(), next_seq_);
    matched_ = true;
    announce("matched");
    for (uint32_t payload : options_.payloads)
    {
        results_.push_back(measure(payload));
        const PayloadResult& done = results_.back();
        announce("payload " + std::to_string(payload) + " measured (" + std::to_string(done.latencies_us.size()) +
                " samples, " + std::to_string(done.lost) + " lost)");
    }
    send_end_marker(options_, state_, endpoints_.writer(), next_seq_);
}

void throw_failure(const PublisherState& state, const std::string& where)
{
    if (state.interrupted())
    {
        throw RunError(kInterruptedBySignal);
    }
    throw RunError(state.failure() + " (" + where + ")");
}

void handshake_with_subscribers(const LatencyOptions& options, PublisherState& state, dds::DataWriter& writer,
        uint32_t& next_seq)
{
    const auto deadline = Clock::now() + std::chrono::seconds(options.discovery_timeout_s);
    const int expected = static_cast<int>(options.subscribers);
    const std::string where = std::string("publisher on ") + to_string(options.transport);
    // Local matching: our ping writer sees every subscriber's reader, our pong reader every pong writer.
    if (!state.wait_for_matches(expected, deadline))
    {
        if (!state.failure().empty())
        {
            throw_failure(state, where);
        }
        throw RunError("discovery timeout after " + std::to_string(options.discovery_timeout_s) + " s: " + where +
                " matched " + std::to_string(state.matched_writers()) + "/" + std::to_string(expected) +
                " ping readers and " + std::to_string(state.matched_readers()) + "/" + std::to_string(expected) +
                " pong writers");
    }
    // Local matching does not prove that each subscriber's pong writer has matched our reader:
    // every subscriber answers a handshake on pong, repeated until all of them got through.
    LatencySample handshake;
    handshake.kind = SampleKind::handshake;
    while (true)
    {
        handshake.seq = next_seq++;
        write_sample_to(writer, handshake, sample_io(options));
        if (state.wait_for_handshakes(options.subscribers, std::min(deadline, Clock::now() + kHandshakePeriod)))
        {
            return;
        }
        if (!state.failure().empty())
        {
            throw_failure(state, where);
        }
        if (Clock::now() >= deadline)
        {
            throw RunError("discovery timeout after " + std::to_string(options.discovery_timeout_s) + " s: " +
                    where + " got the handshake back from " + std::to_string(state.handshakes()) + "/" +
                    std::to_string(expected) + " subscribers");
        }
    }
}

PayloadResult PublisherRole::measure(uint32_t payload)
{
    PayloadResult result;
    result.payload = payload;
    ping_.kind = SampleKind::ping;
    ping_.data.assign(payload, 0x5a);
    uint32_t consecutive_lost = 0;
    const uint32_t total = options_.warmup + options_.samples;
    for (uint32_t i = 0; i < total; ++i)
    {
        // Outside the timed part of the round trip. A payload cut short is not kept: it is in
        // neither the CSV nor the report.
        if (state_.interrupted())
        {
            throw RunError(kInterruptedBySignal);
        }
        take_turn_before(i);
        const bool recorded = i >= options_.warmup;
        double latency_us = 0;
        if (round_trip(latency_us))
        {
            consecutive_lost = 0;
            if (recorded)
            {
                result.latencies_us.push_back(latency_us);
            }
            continue;
        }
        if (!state_.failure().empty())
        {
            if (!state_.interrupted())
            {
                results_.push_back(result);  // what the peer's loss cut short, for the report
            }
            throw_failure(state_, std::string("publisher on ") + to_string(options_.transport) + ", payload " + std::to_string(payload));
        }
        if (recorded)
        {
            ++result.lost;
            std::cerr << "perfgate-latency: lost sample seq " << next_seq_ - 1 << " payload " << payload
                      << " (no pong within " << options_.sample_timeout_ms << " ms)" << std::endl;
        }
        if (++consecutive_lost >= kMaxConsecutiveLost)
        {
            results_.push_back(result);
            throw RunError("peer lost: no pong for " + std::to_string(kMaxConsecutiveLost) +
                    " consecutive samples (publisher on " + to_string(options_.transport) + ", payload " +
                    std::to_string(payload) + ")");
        }
    }
    turns_.pass();
    return result;
}

void PublisherRole::take_turn_before(uint32_t i)
{
    if (!turns_.enabled())
    {
        return;
    }
    const uint32_t warmup = options_.warmup;
    const bool turn_starts = i == 0 || (i >= warmup && (i - warmup) % options_.turn_samples == 0);
    if (!turn_starts)
    {
        return;
    }
    if (i > 0)
    {
        turns_.pass();
    }
    turns_.wait([this]() { return state_.interrupted(); });
    if (i < warmup)
    {
        return;  // the payload's warm-up turn warms up by itself
    }
    for (uint32_t j = 0; j < options_.turn_warmup; ++j)
    {
        double ignored_us = 0;
        if (!round_trip(ignored_us) && !state_.failure().empty())
        {
            throw_failure(state_, std::string("publisher on ") + to_string(options_.transport) + ", warming up after a turn");
        }
    }
}

bool PublisherRole::round_trip(double& latency_us)
{
    const uint32_t seq = next_seq_++;
    ping_.seq = seq;
    state_.expect(seq);
    // One clock read: a second one for the sample's timestamp would add 24 ns to every round trip.
    const auto sent = Clock::now();
    ping_.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch()).count();
    // With intra-process delivery the whole round trip may complete inside write().
    if (!write_sample_to(endpoints_.writer(), ping_, io_))
    {
        return false;
    }
    Clock::time_point arrival;
    if (!state_.wait_for_pong(sent + std::chrono::milliseconds(options_.sample_timeout_ms), arrival))
    {
        return false;
    }
    latency_us = std::chrono::duration<double, std::micro>(arrival - sent).count();
    return true;
}

void PublisherRole::write_outputs(const std::string& error) const
{
    if (!options_.output_csv.empty())
    {
        write_file_atomically(options_.output_csv, format_measurements_csv(results_));
    }
    if (!options_.report_json.empty())
    {
        RunReport report;
        report.fastdds_version = compat::kLibraryVersion;
        report.warmup = options_.warmup;
        report.matched = matched_;
        report.complete = error.empty();
        report.loans = io_.loans;
        report.error = error;
        write_file_atomically(options_.report_json, format_report_json(report, results_));
    }
    for (const PayloadResult& result : results_)
    {
        if (result.lost > 0)
        {
            std::cerr << "perfgate-latency: payload " << result.payload << ": " << result.lost << " of "
                      << options_.samples << " samples lost" << std::endl;
        }
    }
    if (!results_.empty())
    {
        std::cout << format_table(results_) << std::flush;
    }
}

void send_end_marker(const LatencyOptions& options, PublisherState& state, dds::DataWriter& writer,
        uint32_t& next_seq)
{
    if (state.interrupted())
    {
        throw RunError(kInterruptedBySignal);
    }
    LatencySample end;
    end.kind = SampleKind::end;
    end.seq = next_seq++;
    // Best effort may drop one datagram; a few copies make the goodbye arrive.
    for (int copy = 0; copy < 3; ++copy)
    {
        write_sample_to(writer, end, sample_io(options));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (options.reliability == Reliability::reliable)
    {
        // In slices, so that a stop request does not wait for a peer that will never acknowledge.
        const compat::Duration wait(0, kEndAcknowledgementSliceNs);
        for (int slice = 0; slice < kEndAcknowledgementSlices && !state.interrupted(); ++slice)
        {
            if (compat::succeeded(writer.wait_for_acknowledgments(wait)))
            {
                break;
            }
        }
    }
    if (state.interrupted())
    {
        throw RunError(kInterruptedBySignal);  // a signal always ends the run as incomplete
    }
}

}  // namespace perfgate
