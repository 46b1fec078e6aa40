// Option parsing: payload lists, LatencyTest demands files, and every usage error.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "options.hpp"

namespace perfgate {
namespace {

LatencyOptions parse(std::vector<std::string> arguments)
{
    return parse_latency_options(arguments);
}

// The UsageError's message, or "" when parsing succeeded.
std::string usage_error(std::vector<std::string> arguments)
{
    try
    {
        parse_latency_options(arguments);
    }
    catch (const UsageError& error)
    {
        return error.what();
    }
    return "";
}

TEST(Payloads, ParsesCommaList)
{
    EXPECT_EQ(parse_payload_list("16,32, 64", 65536), (std::vector<uint32_t>{16, 32, 64}));
    EXPECT_EQ(parse_payload_list("16384", 65536), (std::vector<uint32_t>{16384}));
}

TEST(Payloads, DefaultsAreTheContractsElevenSizes)
{
    const std::vector<uint32_t> expected{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    EXPECT_EQ(default_payloads(), expected);
    EXPECT_EQ(parse({"--role", "both", "--transport", "intraprocess"}).payloads, expected);
}

TEST(Payloads, RejectsBadLists)
{
    EXPECT_THROW(parse_payload_list("", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("16,,x", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("0", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("-16", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("16.5", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("65537", 65536), UsageError);
    EXPECT_THROW(parse_payload_list("16,32,16", 65536), UsageError);
}

TEST(Demands, ParsesLatencyTestFormat)
{
    EXPECT_EQ(parse_demands("16;32;64", 65536), (std::vector<uint32_t>{16, 32, 64}));
    EXPECT_EQ(parse_demands("16;32;\r\n64;\n", 65536), (std::vector<uint32_t>{16, 32, 64}));
    EXPECT_THROW(parse_demands(";;\n", 65536), UsageError);
    EXPECT_THROW(parse_demands("16;abc", 65536), UsageError);
}

TEST(Demands, ReadsTheFileGivenByOption)
{
    const std::string path = testing::TempDir() + "perfgate_demands.txt";
    std::ofstream(path) << "128;1024\n";
    EXPECT_EQ(parse({"--role", "publisher", "--demands", path}).payloads, (std::vector<uint32_t>{128, 1024}));
    std::remove(path.c_str());
    EXPECT_NE(usage_error({"--role", "publisher", "--demands", path}).find("cannot open"), std::string::npos);
}

TEST(LatencyOptions, ParsesEveryOption)
{
    const LatencyOptions options = parse({"--role=subscriber", "--transport", "tcpv4", "--reliability", "reliable",
            "--samples", "500", "--warmup", "0", "--payloads", "16,1024", "--domain", "42", "--shm", "on",
            "--data-sharing", "on", "--security-dir", "/tmp/sec", "--security-name", "sub", "--subscribers", "3",
            "--subscriber-index", "1", "--xml", "profiles.xml", "--tcp-port", "9000", "--sample-timeout-ms", "250",
            "--discovery-timeout-s", "5", "--tcp-nodelay", "off", "--echo", "on", "--echo-delay-ns", "2500"});
    EXPECT_EQ(options.role, Role::subscriber);
    EXPECT_EQ(options.transport, Transport::tcpv4);
    EXPECT_EQ(options.reliability, Reliability::reliable);
    EXPECT_EQ(options.samples, 500u);
    EXPECT_EQ(options.warmup, 0u);
    EXPECT_EQ(options.payloads, (std::vector<uint32_t>{16, 1024}));
    EXPECT_EQ(options.domain, 42u);
    EXPECT_TRUE(options.shm);
    EXPECT_TRUE(options.data_sharing);
    EXPECT_TRUE(options.secure());
    EXPECT_EQ(options.security_name, "sub");
    EXPECT_EQ(options.subscribers, 3u);
    EXPECT_EQ(options.subscriber_index, 1u);
    EXPECT_TRUE(options.echo) << "--echo on makes a middle subscriber echo";
    EXPECT_EQ(options.echo_delay_ns, 2500u);
    EXPECT_EQ(options.xml_file, "profiles.xml");
    EXPECT_EQ(options.tcp_port, 9000);
    EXPECT_FALSE(options.tcp_nodelay);
    EXPECT_EQ(options.sample_timeout_ms, 250u);
    EXPECT_EQ(options.discovery_timeout_s, 5u);
}

TEST(LatencyOptions, DefaultsAndUnderscoreSpelling)
{
    const LatencyOptions options = parse({"--role", "publisher", "--sample_timeout_ms", "20"});
    EXPECT_EQ(options.transport, Transport::udpv4);
    EXPECT_EQ(options.reliability, Reliability::best_effort);
    EXPECT_EQ(options.samples, 10000u);
    EXPECT_EQ(options.warmup, 100u);
    EXPECT_EQ(options.sample_timeout_ms, 20u);
    EXPECT_EQ(options.discovery_timeout_s, 10u);
    EXPECT_FALSE(options.shm);
    EXPECT_FALSE(options.data_sharing);
    EXPECT_TRUE(parse({"--role", "subscriber"}).echo) << "a single subscriber echoes";
    EXPECT_FALSE(parse({"--role", "subscriber", "--subscribers", "2"}).echo) << "only the last subscriber echoes";
    EXPECT_EQ(options.echo_delay_ns, 0u) << "no injected delay unless asked";
}

TEST(LatencyOptions, ShmTransportTurnsShmOn)
{
    EXPECT_TRUE(parse({"--role", "both", "--transport", "shm"}).shm);
}

TEST(LatencyOptions, VersionNeedsNoRole)
{
    EXPECT_TRUE(parse({"--version"}).show_version);
}

TEST(LatencyOptions, UsageErrors)
{
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
            {{}, "--role"},
            {{"--role", "server"}, "--role must be one of"},
            {{"--role", "publisher", "--transport", "udp"}, "--transport must be one of"},
            {{"--role", "publisher", "--reliability", "RELIABLE"}, "--reliability must be one of"},
            {{"--role", "publisher", "--samples", "0"}, "--samples must be an integer"},
            {{"--role", "publisher", "--samples", "ten"}, "--samples must be an integer"},
            {{"--role", "publisher", "--samples"}, "needs a value"},
            {{"--role", "publisher", "--domain", "233"}, "--domain must be an integer from 0 to 232"},
            {{"--role", "publisher", "--tcp-port", "70000"}, "--tcp-port"},
            {{"--role", "publisher", "--shm", "yes"}, "--shm must be one of"},
            {{"--role", "publisher", "--frobnicate"}, "unknown option --frobnicate"},
            {{"--role", "publisher", "stray"}, "unexpected argument 'stray'"},
            {{"--role", "publisher", "--transport", "intraprocess"}, "needs --role both"},
            {{"--role", "publisher", "--shm", "on"}, "udpv4 measures UDP only"},
            {{"--role", "publisher", "--data-sharing", "on"}, "udpv4 measures UDP only"},
            {{"--role", "both", "--transport", "shm", "--shm", "off"}, "--shm off"},
            {{"--role", "publisher", "--security-dir", "/tmp"}, "go together"},
            {{"--role", "publisher", "--security-name", "x"}, "go together"},
            {{"--role", "subscriber", "--subscribers", "2", "--subscriber-index", "2"}, "not below --subscribers"},
            {{"--role", "subscriber", "--output", "x.csv"}, "not a subscriber"},
            {{"--role", "publisher", "--echo", "off"}, "--echo off applies to a subscriber"},
            {{"--role", "publisher", "--payloads", "16", "--payloads", "32"}, "give the payloads once"},
            {{"--role", "both", "--transport", "tcpv4", "--subscribers", "2"}, "takes one subscriber"},
            {{"--role", "publisher", "--echo-delay-ns", "100"}, "--echo-delay-ns delays the echo"},
            {{"--role", "subscriber", "--echo", "off", "--echo-delay-ns", "100"}, "--echo-delay-ns delays the echo"},
            {{"--role", "both", "--echo-delay-ns", "-1"}, "--echo-delay-ns must be an integer"},
            {{"--role", "publisher", "--take-turns", "5"}, "--take-turns and --turn-samples go together"},
            {{"--role", "publisher", "--turn-samples", "50"}, "--take-turns and --turn-samples go together"},
            {{"--role", "publisher", "--take-turns", "1", "--turn-samples", "50"}, "--take-turns must be an integer"},
            {{"--role", "publisher", "--take-turns", "5", "--turn-samples", "0"}, "--turn-samples must be an integer"},
            {{"--role", "subscriber", "--take-turns", "5", "--turn-samples", "50"}, "not a subscriber"},
            {{"--role", "publisher", "--turn-warmup", "5"}, "--turn-warmup applies when taking turns"},
    };
    for (const auto& [arguments, expected] : cases)
    {
        const std::string message = usage_error(arguments);
        EXPECT_NE(message.find(expected), std::string::npos)
                << "arguments: " << testing::PrintToString(arguments) << "\nmessage: " << message;
    }
}

TEST(LatencyOptions, TakesTurnsOnTwoDescriptors)
{
    const LatencyOptions alone = parse({"--role", "publisher"});
    EXPECT_EQ(alone.turn_socket, -1);
    EXPECT_EQ(alone.turn_samples, 0u);
    const LatencyOptions options = parse({"--role", "both", "--transport", "intraprocess", "--take-turns", "7",
            "--turn-samples", "50", "--turn-warmup", "3"});
    EXPECT_EQ(options.turn_socket, 7);
    EXPECT_EQ(options.turn_warmup, 3u);
    EXPECT_EQ(options.turn_samples, 50u);
}

TEST(LatencyOptions, LoansNeedDataSharing)
{
    const LatencyOptions options =
            parse({"--role", "publisher", "--transport", "shm", "--data-sharing", "on", "--loans", "on"});
    EXPECT_TRUE(options.loans && options.data_sharing && options.shm);
    EXPECT_FALSE(parse({"--role", "publisher"}).loans);
    EXPECT_EQ(usage_error({"--role", "publisher", "--transport", "shm", "--loans", "on"}),
            "--loans on needs --data-sharing on (zero copy is data sharing with loaned samples)");
    EXPECT_EQ(usage_error({"--role", "publisher", "--loans", "yes"}), "--loans must be one of off|on, got 'yes'");
}

TEST(ThroughputOptions, ParsesTheTestMatrix)
{
    const LatencyOptions options = parse({"--role", "publisher", "--experiment", "throughput", "--burst-sizes", "10,200",
            "--recovery-times-ms", "0,5", "--test-time-ms", "250", "--payloads", "16,1024"});
    EXPECT_EQ(options.experiment, Experiment::throughput);
    EXPECT_EQ(options.burst_sizes, (std::vector<uint32_t>{10, 200}));
    EXPECT_EQ(options.recovery_times_ms, (std::vector<uint32_t>{0, 5}));
    EXPECT_EQ(options.test_time_ms, 250u);
    EXPECT_EQ(largest_burst(options), 200u);
}

TEST(ThroughputOptions, DefaultsToBurstsOf100And1000Every5Ms)
{
    const LatencyOptions options = parse({"--role", "subscriber", "--experiment", "throughput"});
    EXPECT_EQ(options.burst_sizes, (std::vector<uint32_t>{100, 1000}));
    EXPECT_EQ(options.recovery_times_ms, (std::vector<uint32_t>{5}));
    EXPECT_EQ(options.test_time_ms, 1000u);
    EXPECT_EQ(parse({"--role", "publisher"}).experiment, Experiment::latency);
}

TEST(ThroughputOptions, UsageErrors)
{
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "speed"}),
            "--experiment must be one of latency|throughput, got 'speed'");
    EXPECT_EQ(usage_error({"--role", "publisher", "--burst-sizes", "10"}),
            "--burst-sizes and --recovery-times-ms apply to --experiment throughput");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--burst-sizes", "0"}),
            "--burst-sizes must be an integer from 1 to 100000, got '0'");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--burst-sizes", "10,10"}),
            "--burst-sizes lists burst size 10 twice");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--recovery-times-ms", ","}),
            "--recovery-times-ms lists no recovery times");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--test-time-ms", "0"}),
            "--test-time-ms must be an integer from 1 to 3600000, got '0'");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--subscribers", "2"}),
            "--experiment throughput takes one subscriber");
    EXPECT_EQ(usage_error({"--role", "both", "--experiment", "throughput", "--echo-delay-ns", "5"}),
            "--take-turns, --echo-delay-ns and --loans apply to --experiment latency");
    // zero is a recovery time (bursts back to back), not an error
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--recovery-times-ms", "0"}), "");
}

TEST(ThroughputOptions, RefusesEmptyItemsAndATestTimeOutsideThroughput)
{
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--burst-sizes", "100,,1000"}),
            "--burst-sizes has an empty item in '100,,1000'");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--recovery-times-ms", "5,"}),
            "--recovery-times-ms has an empty item in '5,'");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--burst-sizes", " 10 , 20 "}), "");
    EXPECT_EQ(usage_error({"--role", "publisher", "--test-time-ms", "50"}),
            "--test-time-ms applies to --experiment throughput");
    EXPECT_EQ(usage_error({"--role", "publisher", "--experiment", "throughput", "--test-time-ms", "50"}), "");
}

TEST(FloorOptions, ParsesAndRejects)
{
    const FloorOptions options = parse_floor_options({"--role", "client", "--transport", "tcp", "--port", "9100",
            "--samples", "10", "--warmup", "1", "--payloads", "16,32", "--output", "floor.csv"});
    EXPECT_EQ(options.role, FloorRole::client);
    EXPECT_EQ(options.transport, FloorTransport::tcp);
    EXPECT_EQ(options.port, 9100);
    EXPECT_EQ(options.samples, 10u);
    EXPECT_EQ(options.payloads, (std::vector<uint32_t>{16, 32}));
    EXPECT_EQ(parse_floor_options({}).payloads.size(), 11u);
    EXPECT_THROW(parse_floor_options({"--transport", "udpv4"}), UsageError);
    EXPECT_THROW(parse_floor_options({"--role", "server", "--output", "x.csv"}), UsageError);
    EXPECT_THROW(parse_floor_options({"--port", "0"}), UsageError);
}

}  // namespace
}  // namespace perfgate
