// A subscription's latency accumulated message by message: the counts and the lost rule as
// perfgate.topology.classify's, the histogram's bins, and a size that does not grow with the messages.
#include <gtest/gtest.h>

#include <cmath>

#include "topology_stats.hpp"

namespace perfgate {
namespace {

TEST(TopologyStats, CountsLateTooLateAndLostAsTheRules)
{
    LatencyStats stats(2000.0, 10000.0);  // us
    uint64_t skipped = 99;
    EXPECT_EQ(stats.add(5, 2000000, skipped), MessageKind::on_time);  // equal to the threshold: within it
    EXPECT_EQ(skipped, 0u);  // the first message starts the count
    EXPECT_EQ(stats.add(6, 2000001, skipped), MessageKind::late);
    EXPECT_EQ(stats.add(9, 10000001, skipped), MessageKind::too_late);
    EXPECT_EQ(skipped, 2u);  // 7 and 8
    EXPECT_EQ(stats.add(8, 100000, skipped), MessageKind::on_time);
    EXPECT_EQ(skipped, 0u);  // out of order skips nothing
    EXPECT_EQ(stats.add(11, 100000, skipped), MessageKind::on_time);
    EXPECT_EQ(skipped, 1u);  // 10, not 9 again
    EXPECT_EQ(stats.received(), 5u);
}

TEST(TopologyStats, BinsAreLogSpacedAndBounded)
{
    EXPECT_EQ(latency_bin(-5), 0u);
    EXPECT_EQ(latency_bin(1), 0u);
    EXPECT_EQ(latency_bin(2), kBinsPerOctave);
    EXPECT_EQ(latency_bin(1024), 10 * kBinsPerOctave);
    EXPECT_EQ(latency_bin(int64_t{1} << 50), kHistogramBins - 1);
    // a latency lies within its bin's edges 2^(b/64) and 2^((b+1)/64)
    for (int64_t ns : {3, 1000, 123456, 987654321})
    {
        const double bin = latency_bin(ns);
        EXPECT_LE(std::exp2(bin / kBinsPerOctave), static_cast<double>(ns));
        EXPECT_GT(std::exp2((bin + 1) / kBinsPerOctave), static_cast<double>(ns));
    }
}

TEST(TopologyStats, SizeDoesNotGrowWithTheMessages)
{
    LatencyStats stats(2000.0, 10000.0);
    uint64_t skipped = 0;
    const auto capacity = stats.histogram().capacity();
    for (uint64_t sequence = 0; sequence < 1000000; ++sequence)
    {
        stats.add(sequence, static_cast<int64_t>(1000 + sequence % 5000000), skipped);
    }
    EXPECT_EQ(stats.histogram().size(), kHistogramBins);
    EXPECT_EQ(stats.histogram().capacity(), capacity);
    EXPECT_EQ(stats.received(), 1000000u);
}

}  // namespace
}  // namespace perfgate
