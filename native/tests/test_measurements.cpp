// Statistics of the table, the raw CSV (3 decimals) and the JSON report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "measurements.hpp"

namespace perfgate {
namespace {

TEST(Statistics, MatchTheContractDefinitions)
{
    // Values checked by hand: sorted 1,2,3,4,10; mean 4; population variance (9+4+1+0+36)/5 = 10.
    const LatencyStatistics s = compute_statistics({4, 1, 10, 3, 2});
    EXPECT_EQ(s.samples, 5u);
    EXPECT_DOUBLE_EQ(s.mean, 4.0);
    EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(10.0));
    EXPECT_DOUBLE_EQ(s.min, 1.0);
    EXPECT_DOUBLE_EQ(s.max, 10.0);
    EXPECT_DOUBLE_EQ(s.median, 3.0);
    EXPECT_DOUBLE_EQ(s.p90, 4.0 + 0.6 * 6.0);      // position 3.6
    EXPECT_DOUBLE_EQ(s.p99, 4.0 + 0.96 * 6.0);     // position 3.96
    EXPECT_DOUBLE_EQ(s.p9999, 4.0 + 0.9996 * 6.0); // position 3.9996
}

TEST(Statistics, PercentileInterpolatesBetweenClosestRanks)
{
    const std::vector<double> sorted{10, 20, 30, 40};
    EXPECT_DOUBLE_EQ(percentile(sorted, 0.5), 25.0);
    EXPECT_DOUBLE_EQ(percentile(sorted, 0.0), 10.0);
    EXPECT_DOUBLE_EQ(percentile(sorted, 1.0), 40.0);
    EXPECT_DOUBLE_EQ(percentile({7.5}, 0.99), 7.5);
}

TEST(Csv, WritesTheContractHeaderAndThreeDecimals)
{
    std::vector<PayloadResult> results(2);
    results[0].payload = 16;
    results[0].latencies_us = {12.3456, 7.0, 0.0004};
    results[1].payload = 1024;
    results[1].latencies_us = {1234.5675};
    const std::string expected = "Sample,Payload [Bytes],Latency [us]\n"
                                 "1,16,12.346\n"
                                 "2,16,7.000\n"
                                 "3,16,0.000\n"
                                 "4,1024,1234.568\n";
    EXPECT_EQ(format_measurements_csv(results), expected);
}

TEST(Csv, NeverWritesNegativeZero)
{
    EXPECT_EQ(format_latency(-0.0001), "0.000");
    EXPECT_EQ(format_latency(2.0005), "2.001");
}

TEST(Csv, WritesAtomically)
{
    const std::string path = testing::TempDir() + "perfgate_measurements.csv";
    write_file_atomically(path, "Sample,Payload [Bytes],Latency [us]\n1,16,1.000\n");
    std::ifstream file(path);
    std::stringstream content;
    content << file.rdbuf();
    EXPECT_EQ(content.str(), "Sample,Payload [Bytes],Latency [us]\n1,16,1.000\n");
    std::remove(path.c_str());
    EXPECT_THROW(write_file_atomically("/nonexistent-folder/x.csv", "x"), std::runtime_error);
    EXPECT_FALSE(can_create_file("/nonexistent-folder/x.csv"));
    EXPECT_TRUE(can_create_file(testing::TempDir() + "x.csv"));
}

TEST(Table, ShowsTheFamiliarColumnsPerPayload)
{
    std::vector<PayloadResult> results(1);
    results[0].payload = 64;
    results[0].latencies_us = {4, 1, 10, 3, 2};
    results[0].lost = 2;
    const std::string table = format_table(results);
    for (const char* column : {"Bytes", "Samples", "stdev", "mean", "min", "50%", "90%", "99%", "99.99%", "max"})
    {
        EXPECT_NE(table.find(column), std::string::npos) << column;
    }
    EXPECT_NE(table.find("      64         5      2      3.162      4.000      1.000      3.000      7.600"),
            std::string::npos)
            << table;
}

TEST(Report, CarriesSamplesAndLostPerPayload)
{
    std::vector<PayloadResult> results(2);
    results[0].payload = 16;
    results[0].latencies_us = {1, 2, 3};
    results[0].lost = 1;
    results[1].payload = 32;
    RunReport report;
    report.fastdds_version = "2.9.1";
    report.warmup = 100;
    report.matched = true;
    report.complete = false;
    report.error = "peer lost: \"x\"";
    const std::string json = format_report_json(report, results);
    EXPECT_NE(json.find("\"fastdds_version\": \"2.9.1\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"warmup\": 100"), std::string::npos) << json;
    EXPECT_NE(json.find("\"16\": {\"samples\": 3, \"lost\": 1}"), std::string::npos) << json;
    EXPECT_NE(json.find("\"32\": {\"samples\": 0, \"lost\": 0}"), std::string::npos) << json;
    EXPECT_NE(json.find("\"matched\": true"), std::string::npos) << json;
    EXPECT_NE(json.find("\"error\": \"peer lost: \\\"x\\\"\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"loans\": false"), std::string::npos) << json;
    report.loans = true;
    EXPECT_NE(format_report_json(report, results).find("\"loans\": true"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
