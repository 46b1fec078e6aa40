#include "topology_stats.hpp"

#include <algorithm>
#include <cmath>

namespace perfgate {

uint32_t latency_bin(int64_t latency_ns)
{
    if (latency_ns < 1)
    {
        return 0;
    }
    const double bin = std::floor(kBinsPerOctave * std::log2(static_cast<double>(latency_ns)));
    return static_cast<uint32_t>(std::min(bin, static_cast<double>(kHistogramBins - 1)));
}

LatencyStats::LatencyStats(double late_us, double too_late_us)
    : late_us_(late_us)
    , too_late_us_(too_late_us)
    , histogram_(kHistogramBins, 0)
{
}

MessageKind LatencyStats::add(uint64_t sequence, int64_t latency_ns, uint64_t& skipped)
{
    // as perfgate.topology.classify: the latency in us, compared with thresholds in us
    const double latency_us = static_cast<double>(latency_ns) / 1000.0;
    skipped = received_ > 0 && sequence > next_sequence_ ? sequence - next_sequence_ : 0;
    if (received_ == 0 || sequence + 1 > next_sequence_)
    {
        next_sequence_ = sequence + 1;
    }
    lost_ += skipped;
    ++received_;
    const double delta = latency_us - mean_us_;
    mean_us_ += delta / static_cast<double>(received_);
    m2_us2_ += delta * (latency_us - mean_us_);
    min_us_ = received_ == 1 ? latency_us : std::min(min_us_, latency_us);
    max_us_ = received_ == 1 ? latency_us : std::max(max_us_, latency_us);
    ++histogram_[latency_bin(latency_ns)];
    if (latency_us > too_late_us_)
    {
        ++too_late_;
        return MessageKind::too_late;
    }
    if (latency_us > late_us_)
    {
        ++late_;
        return MessageKind::late;
    }
    return MessageKind::on_time;
}

void LatencyStats::write_summary(std::FILE* file, uint32_t subscription) const
{
    std::fprintf(file, "%u,%llu,%llu,%llu,%llu,%.17g,%.17g,%.17g,%.17g\n", subscription,
            static_cast<unsigned long long>(received_), static_cast<unsigned long long>(late_),
            static_cast<unsigned long long>(too_late_), static_cast<unsigned long long>(lost_), mean_us_, m2_us2_,
            min_us_, max_us_);
}

void LatencyStats::write_histogram(std::FILE* file, uint32_t subscription) const
{
    for (uint32_t bin = 0; bin < kHistogramBins; ++bin)
    {
        if (histogram_[bin] != 0)
        {
            std::fprintf(file, "%u,%u,%u\n", subscription, bin, histogram_[bin]);
        }
    }
}

}  // namespace perfgate
