// The throughput publisher: for each payload x burst size x recovery time, bursts of samples for
// the test time, each burst followed by what is left of the recovery time; then it asks the
// subscriber what arrived. Fast DDS' ThroughputTest measures the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "endpoints.hpp"
#include "latency_sample.hpp"
#include "options.hpp"
#include "publisher_role.hpp"
#include "throughput_results.hpp"

namespace perfgate {

class ThroughputPublisherRole
{
public:
    ThroughputPublisherRole(const LatencyOptions& options, const std::string& participant_name, StopRequest& stop);

    // Every test in order, announcing each; throws RunError when it cannot finish, keeping the
    // tests done in results().
    void run(const std::function<void(const std::string&)>& announce);

    const std::vector<ThroughputTestResult>& results() const { return results_; }

    // The CSV (when asked for), complete tests only; `error` is empty for a complete run.
    void write_outputs(const std::string& error) const;

private:
    ThroughputTestResult run_test(uint32_t payload, uint32_t burst, uint32_t recovery_ms);
    // One sample of a burst; reliable: waits while the history is full of unacknowledged samples.
    bool write_burst_sample();
    // Asks until the subscriber reported on `test` (a request or its answer may be lost).
    void collect_report(uint32_t test, ThroughputTestResult& result);
    std::string where(const std::string& doing) const;

    const LatencyOptions& options_;
    PublisherState state_;
    StopRequest::Subscription stop_subscription_;  // after state_, which it interrupts
    WriterListener writer_listener_;
    PongListener pong_listener_;
    LatencySample sample_;
    uint32_t next_seq_ = 1;
    uint32_t test_index_ = 0;
    std::vector<ThroughputTestResult> results_;
    Endpoints endpoints_;  // last: destroyed first, before the listeners it calls
};

}  // namespace perfgate
