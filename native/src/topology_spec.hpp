// perfgate-topology's options and the topology it runs, as perfgate writes it for the harness: one
// line per node and per endpoint, already validated on the Python side (perfgate.topology.model), so
// the harness only checks that the lines are well formed. Parsing is pure (text in, structs out).
//
//   node NAME
//   pub TOPIC PERIOD_US SIZE_BYTES SUBSCRIBERS     a publisher of the node above, and how many
//                                                  subscriptions (in any process) it must match
//   sub INDEX TOPIC SIZE_BYTES PERIOD_US LATE_US TOO_LATE_US
//                                                  a subscription of the node above; INDEX numbers it
//                                                  in the output files; its publisher's period and
//                                                  its late and too-late thresholds in us
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"

namespace perfgate {

struct TopologyPublisher
{
    std::string topic;
    uint64_t period_us = 0;
    uint32_t size = 0;
    uint32_t subscribers = 0;
};

struct TopologySubscriber
{
    uint32_t index = 0;
    std::string topic;
    uint32_t size = 0;
    // The publisher's period: with the run's length it fixes how many messages the subscription is due.
    uint64_t period_us = 0;
    double late_us = 0.0;
    double too_late_us = 0.0;
};

struct TopologyNodeSpec
{
    std::string name;
    std::vector<TopologyPublisher> publishers;
    std::vector<TopologySubscriber> subscribers;
};

struct TopologyOptions
{
    bool show_help = false;
    std::string spec_file;
    std::vector<std::string> nodes;  // empty: every node of the spec
    uint32_t time_ms = 10000;
    uint32_t domain = 0;
    bool intraprocess = true;
    Transport transport = Transport::udpv4;
    Reliability reliability = Reliability::reliable;
    uint32_t history_depth = 10;
    uint32_t participants = 0;  // in the whole domain (all processes): how far discovery looks on loopback
    uint32_t discovery_timeout_s = 30;
    std::string summary_csv;
    std::string histogram_csv;
    std::string events_dir;
    std::string sent_csv;
    std::string matched_file;  // optional: the steady-clock ns at which every endpoint had matched
    // One process per node: publishing starts at one instant in all of them, once every process has
    // matched: each writes its matched file (matched_*.txt beside --matched) and waits for `barrier` of
    // them; the start is the latest matched time plus a margin, the same in every process.
    uint32_t barrier = 1;
    std::string allocator_csv;  // optional: mallinfo2 every sampling_ms
    uint32_t sampling_ms = 500;
    // A test facility, never used by an ordinary run: this node's executor sleeps stall_ms once,
    // stall_at_ms after publishing starts (a subscriber that falls behind on purpose).
    std::string stall_node;
    uint32_t stall_at_ms = 0;
    uint32_t stall_ms = 0;
    // A test aid, never used by an ordinary run: every publish busy-waits this long between taking its
    // timestamp and writing, a known slow-down of the whole system (perfgate topology-ab's tests).
    uint64_t publish_delay_ns = 0;
};

TopologyOptions parse_topology_options(const std::vector<std::string>& arguments);
std::vector<TopologyNodeSpec> parse_topology_spec(const std::string& text);
std::string topology_usage();

}  // namespace perfgate
