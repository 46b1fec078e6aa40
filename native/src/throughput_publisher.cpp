#include "throughput_publisher.hpp"

#include <iostream>
#include <thread>

namespace perfgate {
namespace dds = compat::dds;
using Clock = std::chrono::steady_clock;

namespace {

// How often an unanswered report request is sent again, and for how long.
constexpr auto kReportRetry = std::chrono::milliseconds(100);
constexpr auto kReportTimeout = std::chrono::seconds(3);
// Reliable: how long the last burst may take to be acknowledged before the report is asked for
// (what is still unacknowledged then counts as lost), in slices so that a stop is not delayed.
constexpr int kAcknowledgementSlices = 50;
constexpr uint32_t kAcknowledgementSliceNs = 100000000;

int64_t steady_ns(Clock::time_point when)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
}

}  // namespace

ThroughputPublisherRole::ThroughputPublisherRole(const LatencyOptions& options, const std::string& participant_name,
        StopRequest& stop)
    : options_(options)
    , stop_subscription_(stop.subscribe([this]() { state_.interrupt(); }))
    , writer_listener_(state_)
    , pong_listener_(state_, sample_io(options))
    , endpoints_(options, Side::publisher, 0, participant_name, writer_listener_, pong_listener_,
              [](dds::DataWriter&) {})
{
}

std::string ThroughputPublisherRole::where(const std::string& doing) const
{
    return std::string("throughput publisher on ") + to_string(options_.transport) + ", " + doing;
}

void ThroughputPublisherRole::run(const std::function<void(const std::string&)>& announce)
{
    handshake_with_subscribers(options_, state_, endpoints_.writer(), next_seq_);
    announce("matched");
    for (uint32_t payload : options_.payloads)
    {
        for (uint32_t burst : options_.burst_sizes)
        {
            for (uint32_t recovery_ms : options_.recovery_times_ms)
            {
                results_.push_back(run_test(payload, burst, recovery_ms));
                const ThroughputTestResult& done = results_.back();
                // After every test, not only at the end: a crash inside Fast DDS (an assertion, a
                // signal no handler sees) then still leaves the tests before it.
                if (!options_.output_csv.empty())
                {
                    write_file_atomically(options_.output_csv, format_throughput_csv(results_));
                }
                announce("test " + std::to_string(payload) + " B x " + std::to_string(burst) + ", " +
                        std::to_string(recovery_ms) + " ms measured (" + std::to_string(done.sent) + " sent, " +
                        std::to_string(done.received) + " received)");
            }
        }
    }
    send_end_marker(options_, state_, endpoints_.writer(), next_seq_);
}

ThroughputTestResult ThroughputPublisherRole::run_test(uint32_t payload, uint32_t burst, uint32_t recovery_ms)
{
    ThroughputTestResult result;
    result.payload = payload;
    result.burst = burst;
    result.recovery_ms = recovery_ms;
    const uint32_t test = ++test_index_;
    sample_.kind = SampleKind::burst;
    sample_.origin = test;
    sample_.data.assign(payload, 0x5a);
    const auto test_time = std::chrono::milliseconds(options_.test_time_ms);
    const auto recovery = std::chrono::milliseconds(recovery_ms);
    const auto start = Clock::now();
    sample_.timestamp_ns = steady_ns(start);
    auto last_burst_end = start;
    do
    {
        // Between bursts, never inside one: a burst is written as fast as the writer takes it.
        if (state_.interrupted() || !state_.failure().empty())
        {
            throw_failure(state_, where("payload " + std::to_string(payload)));
        }
        const auto burst_start = Clock::now();
        for (uint32_t i = 0; i < burst; ++i)
        {
            sample_.seq = next_seq_++;
            if (write_burst_sample())
            {
                ++result.sent;
            }
        }
        last_burst_end = Clock::now();
        std::this_thread::sleep_until(burst_start + recovery);  // at once when the burst took longer
    } while (last_burst_end - start < test_time);
    result.publication_ns = steady_ns(last_burst_end) - steady_ns(start);
    collect_report(test, result);
    return result;
}

bool ThroughputPublisherRole::write_burst_sample()
{
    if (compat::write_sample(endpoints_.writer(), &sample_))
    {
        return true;
    }
    if (options_.reliability != Reliability::reliable)
    {
        return false;  // not sent; the rates count what the writer took
    }
    // A full history of unacknowledged samples: write() gave up after its blocking time.
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.sample_timeout_ms);
    while (Clock::now() < deadline)
    {
        if (state_.interrupted() || !state_.failure().empty())
        {
            throw_failure(state_, where("writing a burst"));
        }
        if (compat::write_sample(endpoints_.writer(), &sample_))
        {
            return true;
        }
    }
    throw RunError("the subscriber acknowledged nothing for " + std::to_string(options_.sample_timeout_ms) +
            " ms (" + where("writing a burst") + ")");
}

void ThroughputPublisherRole::collect_report(uint32_t test, ThroughputTestResult& result)
{
    if (options_.reliability == Reliability::reliable)
    {
        const compat::Duration wait(0, kAcknowledgementSliceNs);
        for (int slice = 0; slice < kAcknowledgementSlices && !state_.interrupted(); ++slice)
        {
            if (compat::succeeded(endpoints_.writer().wait_for_acknowledgments(wait)))
            {
                break;
            }
        }
    }
    LatencySample request;
    request.kind = SampleKind::report_request;
    request.seq = test;
    const auto deadline = Clock::now() + kReportTimeout;
    while (true)
    {
        compat::write_sample(endpoints_.writer(), &request);
        if (state_.wait_for_reports(test, options_.subscribers, std::min(deadline, Clock::now() + kReportRetry)))
        {
            break;
        }
        if (!state_.failure().empty())
        {
            throw_failure(state_, where("waiting for the subscriber's report"));
        }
        if (Clock::now() >= deadline)
        {
            throw RunError("no report from the subscriber within " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kReportTimeout).count()) +
                    " s (" + where("payload " + std::to_string(result.payload)) + ")");
        }
    }
    for (const auto& report : state_.reports(test))
    {
        result.received += report.second.first;
        result.subscription_ns = std::max(result.subscription_ns, report.second.second);
    }
}

void ThroughputPublisherRole::write_outputs(const std::string& error) const
{
    if (!options_.output_csv.empty())
    {
        write_file_atomically(options_.output_csv, format_throughput_csv(results_));
    }
    if (!error.empty())
    {
        std::cerr << "perfgate-latency: " << results_.size() << " throughput test(s) complete before: " << error
                  << std::endl;
    }
}

}  // namespace perfgate
