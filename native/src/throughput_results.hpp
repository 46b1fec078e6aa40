// What a throughput test counted, the subscribers' report on the wire, and the harness's CSV.
// The rates (samples/s, Mb/s) and lost samples are derived by perfgate (perfgate.throughput_table),
// so each formula exists once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfgate {

struct ThroughputTestResult
{
    uint32_t payload = 0;
    uint32_t burst = 0;
    uint32_t recovery_ms = 0;
    uint64_t sent = 0;            // samples the writer accepted
    int64_t publication_ns = 0;   // from the test's start to the end of its last burst
    uint64_t received = 0;        // summed over the subscribers
    int64_t subscription_ns = 0;  // the longest: from the test's start to a subscriber's last sample
};

// A subscriber's report on one test, carried in LatencySample::data (16 bytes, little-endian).
std::vector<uint8_t> encode_report(uint64_t received, int64_t subscription_ns);
// False unless `data` is exactly one encoded report.
bool decode_report(const std::vector<uint8_t>& data, uint64_t& received, int64_t& subscription_ns);

// Header and one row per test:
// Payload [Bytes],Demand [sample/burst],Recovery time [ms],Sent [samples],Publication time [us],
// Received [samples],Subscription time [us]   (times with three decimals)
std::string format_throughput_csv(const std::vector<ThroughputTestResult>& results);

}  // namespace perfgate
