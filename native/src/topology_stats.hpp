// One subscription's latency, accumulated message by message in a fixed size: counts (received,
// late, too late, lost), mean and sum of squared deviations (Welford), min, max and a histogram of
// kBinsPerOctave log-spaced bins per factor of 2 of the latency in ns, from which perfgate reads the
// median and the 99 % within 2^(1/128) - 1 = 0.55 % (perfgate.topology.histogram: the same bins).
// A run's memory does not grow with its length. Pure: numbers in, numbers out.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

namespace perfgate {

constexpr uint32_t kBinsPerOctave = 64;
constexpr uint32_t kOctaves = 42;  // 2^42 ns: 73 minutes, beyond the longest run
constexpr uint32_t kHistogramBins = kBinsPerOctave * kOctaves;

// The bin of a latency: floor(kBinsPerOctave x log2(ns)); below 1 ns the first, beyond the last the last.
uint32_t latency_bin(int64_t latency_ns);

enum class MessageKind
{
    on_time = 0,
    late = 1,
    too_late = 2,
};

class LatencyStats
{
public:
    // Thresholds in us, as perfgate computed them (a latency equal to one is within it).
    LatencyStats(double late_us, double too_late_us);

    // One message taken, in arrival order. Returns its kind; `skipped` is how many sequence numbers
    // were skipped just before it (lost: the first message starts the count, a number at or below one
    // already seen skips nothing).
    MessageKind add(uint64_t sequence, int64_t latency_ns, uint64_t& skipped);

    uint64_t received() const { return received_; }
    const std::vector<uint32_t>& histogram() const { return histogram_; }
    // subscription,received,late,too_late,lost,mean_us,m2_us2,min_us,max_us
    void write_summary(std::FILE* file, uint32_t subscription) const;
    // subscription,bin,count for the bins that are not empty
    void write_histogram(std::FILE* file, uint32_t subscription) const;

private:
    double late_us_;
    double too_late_us_;
    uint64_t received_ = 0;
    uint64_t late_ = 0;
    uint64_t too_late_ = 0;
    uint64_t lost_ = 0;
    uint64_t next_sequence_ = 0;  // the highest sequence seen, plus one
    double mean_us_ = 0.0;
    double m2_us2_ = 0.0;
    double min_us_ = 0.0;
    double max_us_ = 0.0;
    std::vector<uint32_t> histogram_;
};

}  // namespace perfgate
