// perfgate-topology's options and the spec perfgate writes for it: parsed, and every malformed line
// or option refused with a UsageError.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology_spec.hpp"

namespace perfgate {
namespace {

std::string spec_error(const std::string& text)
{
    try
    {
        parse_topology_spec(text);
    }
    catch (const UsageError& error)
    {
        return error.what();
    }
    return "";
}

std::string option_error(const std::vector<std::string>& arguments)
{
    try
    {
        parse_topology_options(arguments);
    }
    catch (const UsageError& error)
    {
        return error.what();
    }
    return "";
}

TEST(TopologySpec, ParsesNodesWithTheirPublishersAndSubscriptions)
{
    const auto nodes =
            parse_topology_spec("node camera\npub image 25000 250000 2\n\nnode recorder\n"
                                "sub 3 image 250000 25000 5000 25000.5\n");
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].name, "camera");
    ASSERT_EQ(nodes[0].publishers.size(), 1u);
    EXPECT_EQ(nodes[0].publishers[0].topic, "image");
    EXPECT_EQ(nodes[0].publishers[0].period_us, 25000u);
    EXPECT_EQ(nodes[0].publishers[0].size, 250000u);
    EXPECT_EQ(nodes[0].publishers[0].subscribers, 2u);
    ASSERT_EQ(nodes[1].subscribers.size(), 1u);
    EXPECT_EQ(nodes[1].subscribers[0].index, 3u);
    EXPECT_EQ(nodes[1].subscribers[0].size, 250000u);
    EXPECT_EQ(nodes[1].subscribers[0].period_us, 25000u);
    EXPECT_EQ(nodes[1].subscribers[0].late_us, 5000.0);
    EXPECT_EQ(nodes[1].subscribers[0].too_late_us, 25000.5);
}

TEST(TopologySpec, RefusesMalformedLines)
{
    EXPECT_EQ(spec_error(""), "the topology has no node");
    EXPECT_EQ(spec_error("pub t 1000 8 1\n"), "line 1: not a node, pub or sub line");
    EXPECT_EQ(spec_error("node a\npub t 10 8 1\n"), "line 2: 10 is outside 100 to 3600000000");
    EXPECT_EQ(spec_error("node a\nsub x t 8 1000 200 1000\n"), "line 2: not a whole number: x");
    EXPECT_EQ(spec_error("node a\nsub 1 t 8\n"), "line 2: not a node, pub or sub line");  // no period
    EXPECT_EQ(spec_error("node a\nsub 1 t 8 1000\n"), "line 2: not a node, pub or sub line");  // no thresholds
    EXPECT_EQ(spec_error("node a\nsub 1 t 8 1000 nan 1000\n"), "line 2: not a positive number: nan");
    EXPECT_EQ(spec_error("node a\nsub 1 t 8 1000 200 1e3x\n"), "line 2: not a positive number: 1e3x");
    EXPECT_EQ(spec_error("node a\npub t 1000 99999999 1\n"), "line 2: 99999999 is outside 0 to 4194304");
}

TEST(TopologyOptions, ParsesAndRefuses)
{
    const auto options = parse_topology_options({"--spec", "s", "--summary", "r", "--histogram", "h", "--events-dir",
            "e", "--sent", "x", "--nodes", "a,b", "--ipc", "off", "--reliability", "best_effort", "--stall", "a,500,300",
            "--barrier", "3"});
    EXPECT_EQ(options.nodes, (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(options.intraprocess);
    EXPECT_EQ(options.reliability, Reliability::best_effort);
    EXPECT_EQ(options.stall_node, "a");
    EXPECT_EQ(options.stall_at_ms, 500u);
    EXPECT_EQ(options.stall_ms, 300u);
    EXPECT_EQ(options.barrier, 3u);
    EXPECT_TRUE(
            parse_topology_options({"--spec", "s", "--summary", "r", "--histogram", "h", "--events-dir", "e", "--sent",
                    "x", "--nodes", "all"}).nodes.empty());
    EXPECT_EQ(option_error({"--spec", "s"}), "--spec, --summary, --histogram, --events-dir and --sent are required");
    EXPECT_EQ(option_error({"--ipc", "maybe"}), "--ipc: on or off, got maybe");
    EXPECT_EQ(option_error({"--stall", "a,1"}), "--stall: NODE,AT_MS,FOR_MS, got a,1");
    EXPECT_EQ(option_error({"--time-ms", "0"}), "--time-ms: 0 is outside 1 to 3600000");
    EXPECT_EQ(option_error({"--bogus", "1"}), "unknown option --bogus");
}

}  // namespace
}  // namespace perfgate
