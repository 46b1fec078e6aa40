// What a run measured and how it is written: statistics, the familiar table, the raw CSV of the
// contract (Sample,Payload [Bytes],Latency [us], 3 decimals) and the JSON run report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perfgate {

struct PayloadResult
{
    uint32_t payload = 0;
    std::vector<double> latencies_us;  // full round trips, in the order measured
    uint32_t lost = 0;                 // round trips without a pong within the sample timeout
};

struct LatencyStatistics
{
    std::size_t samples = 0;
    double stdev = 0;  // population (divide by n), as the contract's summaries
    double mean = 0;
    double min = 0;
    double median = 0;
    double p90 = 0;
    double p99 = 0;
    double p9999 = 0;
    double max = 0;
};

// Linear interpolation between closest ranks: position q*(n-1) in the sorted values.
double percentile(const std::vector<double>& sorted, double quantile);

LatencyStatistics compute_statistics(const std::vector<double>& latencies_us);

// "12.346": exactly three decimals, never "-0.000".
std::string format_latency(double value);

std::string format_measurements_csv(const std::vector<PayloadResult>& results);
std::string format_table(const std::vector<PayloadResult>& results);

struct RunReport
{
    std::string fastdds_version;
    uint32_t warmup = 0;
    bool matched = false;
    bool complete = false;
    // Every sample the publisher wrote was loaned from Fast DDS (a refused loan ends the run).
    bool loans = false;
    std::string error;  // empty when complete
};

std::string format_report_json(const RunReport& report, const std::vector<PayloadResult>& results);

// Writes beside the target and renames, so a reader never sees a half-written file.
// Throws std::runtime_error naming the path when the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

// True if a file can be created at path (its folder exists and is writable).
bool can_create_file(const std::string& path);

}  // namespace perfgate
