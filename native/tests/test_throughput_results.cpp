// The subscriber's report on the wire and the harness's throughput CSV.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "throughput_results.hpp"

namespace perfgate {
namespace {

TEST(ThroughputReport, RoundTripsCountsAndTimes)
{
    uint64_t received = 0;
    int64_t subscription_ns = 0;
    ASSERT_TRUE(decode_report(encode_report(123456789012ull, 987654321), received, subscription_ns));
    EXPECT_EQ(received, 123456789012ull);
    EXPECT_EQ(subscription_ns, 987654321);
    EXPECT_EQ(encode_report(1, 2).size(), 16u);
}

TEST(ThroughputReport, RefusesAnythingButOneReport)
{
    uint64_t received = 7;
    int64_t subscription_ns = 7;
    std::vector<uint8_t> short_data(15, 0);
    EXPECT_FALSE(decode_report(short_data, received, subscription_ns));
    std::vector<uint8_t> long_data = encode_report(1, 2);
    long_data.push_back(0);
    EXPECT_FALSE(decode_report(long_data, received, subscription_ns));
    EXPECT_EQ(received, 7u);
}

TEST(ThroughputCsv, OneRowPerTestTimesInMicroseconds)
{
    ThroughputTestResult result;
    result.payload = 1024;
    result.burst = 100;
    result.recovery_ms = 5;
    result.sent = 19100;
    result.publication_ns = 1002568777;
    result.received = 19000;
    result.subscription_ns = 1002576998;
    EXPECT_EQ(format_throughput_csv({result}),
            "Payload [Bytes],Demand [sample/burst],Recovery time [ms],Sent [samples],Publication time [us],"
            "Received [samples],Subscription time [us]\n"
            "1024,100,5,19100,1002568.777,19000,1002576.998\n");
    EXPECT_EQ(format_throughput_csv({}).find('\n'), format_throughput_csv({}).size() - 1);
}

}  // namespace
}  // namespace perfgate
