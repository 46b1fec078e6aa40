// Command-line options of perfgate-latency and perfgate-floor, parsed into plain structs.
//
// Parsing is pure (arguments in, struct out) so the unit tests cover every usage error;
// a UsageError carries the one line printed on stderr before exiting with code 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfgate {

class UsageError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

enum class Role { publisher, subscriber, both };
enum class Transport { intraprocess, udpv4, tcpv4, shm };
enum class Reliability { best_effort, reliable };
// latency: round trips (LatencyTest); throughput: bursts at a pace, counted by the subscribers
// (ThroughputTest).
enum class Experiment { latency, throughput };

const char* to_string(Role role);
const char* to_string(Transport transport);
const char* to_string(Reliability reliability);
const char* to_string(Experiment experiment);

struct LatencyOptions
{
    bool show_version = false;
    bool show_help = false;
    Role role = Role::publisher;
    Experiment experiment = Experiment::latency;
    Transport transport = Transport::udpv4;
    Reliability reliability = Reliability::best_effort;
    uint32_t samples = 10000;
    uint32_t warmup = 100;
    std::vector<uint32_t> payloads;
    uint32_t domain = 0;
    bool shm = false;
    bool data_sharing = false;
    // Zero copy: plain samples loaned from the writer and taken as loans (needs data sharing).
    bool loans = false;
    std::string security_dir;  // empty: no DDS Security
    std::string security_name;
    uint32_t subscribers = 1;
    uint32_t subscriber_index = 0;
    bool echo = true;
    // Busy-wait this long before each echo: a known regression for calibrating a gate (perfgate ab
    // --inject-delay-ns), never used by an ordinary run.
    uint32_t echo_delay_ns = 0;
    // Taking turns with a second publisher (perfgate ab): the inherited socket, -1 when alone, and
    // how many recorded round trips one turn holds (a payload's warm-up is a turn of its own).
    int turn_socket = -1;
    uint32_t turn_samples = 0;
    // Unrecorded round trips at the start of each later turn: the first ones after the other side's
    // turn find cold caches and sleeping threads (the first 1.8-2.6x, the second 1.2x slower here).
    uint32_t turn_warmup = 0;
    std::string xml_file;
    uint16_t tcp_port = 7600;
    bool tcp_nodelay = true;
    std::string output_csv;
    std::string report_json;
    uint32_t sample_timeout_ms = 1000;
    uint32_t discovery_timeout_s = 10;
    // Throughput: every payload x burst size x recovery time is one test of test_time_ms, bursts of
    // that many samples each followed by the rest of the recovery time.
    std::vector<uint32_t> burst_sizes;
    std::vector<uint32_t> recovery_times_ms;
    uint32_t test_time_ms = 1000;

    bool secure() const { return !security_dir.empty(); }
};

enum class FloorRole { server, client, both };
enum class FloorTransport { udp, tcp };

struct FloorOptions
{
    bool show_help = false;
    FloorRole role = FloorRole::both;
    FloorTransport transport = FloorTransport::udp;
    uint16_t port = 7700;
    uint32_t samples = 10000;
    uint32_t warmup = 100;
    std::vector<uint32_t> payloads;
    std::string output_csv;
    uint32_t sample_timeout_ms = 1000;
};

// The contract's default payloads: 16 B to 16 KiB, doubling.
std::vector<uint32_t> default_payloads();

// "16,32,64": positive byte counts, each at most max_bytes.
std::vector<uint32_t> parse_payload_list(const std::string& text, uint32_t max_bytes);

// The throughput defaults: bursts of 100 and 1000 samples, 5 ms recovery time.
std::vector<uint32_t> default_burst_sizes();
std::vector<uint32_t> default_recovery_times_ms();
// The largest burst: the history depth the throughput writer and readers need.
uint32_t largest_burst(const LatencyOptions& options);

// Fast DDS LatencyTest demands file content: "16;32;64", optionally over several lines.
std::vector<uint32_t> parse_demands(const std::string& text, uint32_t max_bytes);

LatencyOptions parse_latency_options(const std::vector<std::string>& arguments);
FloorOptions parse_floor_options(const std::vector<std::string>& arguments);

std::string latency_usage();
std::string floor_usage();

}  // namespace perfgate
