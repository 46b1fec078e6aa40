#include "options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "latency_sample.hpp"

namespace perfgate {
namespace {

// A burst is written into the writer's history at once: its depth is the largest burst.
constexpr uint32_t kMaxBurst = 100000;

// Splits "--name=value" / "--name value" arguments into (name, value) pairs; underscores in a
// name are accepted as hyphens, as everywhere in perfgate.
class ArgumentReader
{
public:
    explicit ArgumentReader(const std::vector<std::string>& arguments)
        : arguments_(arguments)
    {
    }

    bool next(std::string& name, std::function<std::string()>& value)
    {
        if (position_ >= arguments_.size())
        {
            return false;
        }
        const std::string& argument = arguments_[position_++];
        if (argument.rfind("--", 0) != 0 || argument.size() == 2)
        {
            throw UsageError("unexpected argument '" + argument + "' (options start with --)");
        }
        const auto equals = argument.find('=');
        name = argument.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
        std::replace(name.begin(), name.end(), '_', '-');
        if (equals != std::string::npos)
        {
            const std::string inline_value = argument.substr(equals + 1);
            value = [inline_value]() { return inline_value; };
            return true;
        }
        const std::string option = name;
        value = [this, option]() {
            if (position_ >= arguments_.size())
            {
                throw UsageError("option --" + option + " needs a value");
            }
            return arguments_[position_++];
        };
        return true;
    }

private:
    const std::vector<std::string>& arguments_;
    std::size_t position_ = 0;
};

uint64_t parse_unsigned(const std::string& option, const std::string& text, uint64_t minimum, uint64_t maximum)
{
    const bool digits_only = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return c >= '0' && c <= '9';
    });
    errno = 0;
    const unsigned long long value = digits_only ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits_only || errno == ERANGE || value < minimum || value > maximum)
    {
        throw UsageError("--" + option + " must be an integer from " + std::to_string(minimum) + " to " +
                std::to_string(maximum) + ", got '" + text + "'");
    }
    return value;
}

template<typename Enum>
Enum parse_choice(const std::string& option, const std::string& text, const std::map<std::string, Enum>& choices)
{
    const auto found = choices.find(text);
    if (found == choices.end())
    {
        std::string names;
        for (const auto& choice : choices)
        {
            names += (names.empty() ? "" : "|") + choice.first;
        }
        throw UsageError("--" + option + " must be one of " + names + ", got '" + text + "'");
    }
    return found->second;
}

bool parse_switch(const std::string& option, const std::string& text)
{
    return parse_choice<bool>(option, text, {{"on", true}, {"off", false}});
}

// A list of distinct whole numbers from minimum to maximum; `noun` names one item in messages.
std::vector<uint32_t> parse_separated(const std::string& text, const std::string& separators, uint32_t minimum,
        uint32_t maximum, const std::string& what, const std::string& noun)
{
    std::vector<uint32_t> payloads;
    std::string item;
    auto flush = [&]() {
        const auto first = item.find_first_not_of(" \t\r");
        const auto last = item.find_last_not_of(" \t\r");
        const std::string trimmed = first == std::string::npos ? "" : item.substr(first, last - first + 1);
        item.clear();
        if (trimmed.empty())
        {
            return;
        }
        payloads.push_back(static_cast<uint32_t>(parse_unsigned(what, trimmed, minimum, maximum)));
    };
    for (char c : text)
    {
        if (separators.find(c) != std::string::npos)
        {
            flush();
        }
        else
        {
            item += c;
        }
    }
    flush();
    if (payloads.empty())
    {
        throw UsageError("--" + what + " lists no " + noun + "s");
    }
    std::vector<uint32_t> sorted = payloads;
    std::sort(sorted.begin(), sorted.end());
    const auto duplicate = std::adjacent_find(sorted.begin(), sorted.end());
    if (duplicate != sorted.end())
    {
        throw UsageError("--" + what + " lists " + noun + " " + std::to_string(*duplicate) + " twice");
    }
    return payloads;
}

std::string read_text_file(const std::string& option, const std::string& path)
{
    std::ifstream file(path);
    if (!file)
    {
        throw UsageError("--" + option + " " + path + ": cannot open file");
    }
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// The options both programs share: what is measured and where it is written. True when `name` was
// one of them (LatencyOptions and FloorOptions name these fields alike).
template <typename Options>
bool parse_measurement_option(const std::string& name, const std::function<std::string()>& value, Options& options,
                              bool& payloads_given)
{
    if (name == "samples") { options.samples = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 100000000)); }
    else if (name == "warmup") { options.warmup = static_cast<uint32_t>(parse_unsigned(name, value(), 0, 100000000)); }
    else if (name == "payloads" || name == "demands")
    {
        if (payloads_given)
        {
            throw UsageError("give the payloads once: --payloads or --demands");
        }
        options.payloads = name == "payloads" ? parse_payload_list(value(), kMaxDataBytes)
                                              : parse_demands(read_text_file(name, value()), kMaxDataBytes);
        payloads_given = true;
    }
    else if (name == "output") { options.output_csv = value(); }
    else if (name == "sample-timeout-ms")
    {
        options.sample_timeout_ms = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 600000));
    }
    else
    {
        return false;
    }
    return true;
}

void check_latency_consistency(LatencyOptions& options, bool echo_given, bool shm_given, bool payloads_given)
{
    if (!payloads_given)
    {
        options.payloads = default_payloads();
    }
    if (options.transport == Transport::intraprocess && options.role != Role::both)
    {
        throw UsageError("--transport intraprocess needs --role both (one process, two participants)");
    }
    if (options.transport == Transport::tcpv4 && options.role == Role::both && options.subscribers > 1)
    {
        // Fast DDS 2.9.1 crashes (SIGSEGV in TCPTransportInterface::Receive) with several TCP
        // client participants in one process.
        throw UsageError("--role both --transport tcpv4 takes one subscriber; run more as separate processes");
    }
    if (options.transport == Transport::udpv4 && (options.shm || options.data_sharing))
    {
        throw UsageError("--transport udpv4 measures UDP only: --shm and --data-sharing must be off");
    }
    if (options.transport == Transport::shm)
    {
        if (shm_given && !options.shm)
        {
            throw UsageError("--transport shm cannot run with --shm off");
        }
        options.shm = true;
    }
    if (options.loans && !options.data_sharing)
    {
        // Without data sharing a loaned sample is copied into the transport anyway: no zero copy.
        throw UsageError("--loans on needs --data-sharing on (zero copy is data sharing with loaned samples)");
    }
    if (options.secure() != !options.security_name.empty())
    {
        throw UsageError("--security-dir and --security-name go together");
    }
    if (options.subscriber_index >= options.subscribers)
    {
        throw UsageError("--subscriber-index " + std::to_string(options.subscriber_index) +
                " is not below --subscribers " + std::to_string(options.subscribers));
    }
    if (options.role == Role::subscriber)
    {
        if (!options.output_csv.empty() || !options.report_json.empty())
        {
            throw UsageError("--output and --report are written by the publisher (or --role both), not a subscriber");
        }
        if (!echo_given)
        {
            // One-to-many: every subscriber receives, only the last one echoes.
            options.echo = options.subscriber_index + 1 == options.subscribers;
        }
    }
    else if (echo_given && !options.echo)
    {
        throw UsageError("--echo off applies to a subscriber; the publisher needs an echo to measure");
    }
    if (options.echo_delay_ns > 0 && (options.role == Role::publisher || (options.role == Role::subscriber && !options.echo)))
    {
        throw UsageError("--echo-delay-ns delays the echo: it applies to the echoing subscriber or --role both");
    }
    if ((options.turn_socket >= 0) != (options.turn_samples > 0))
    {
        throw UsageError("--take-turns and --turn-samples go together");
    }
    if (options.turn_warmup > 0 && options.turn_socket < 0)
    {
        throw UsageError("--turn-warmup applies when taking turns (--take-turns)");
    }
    if (options.turn_socket >= 0 && options.role == Role::subscriber)
    {
        throw UsageError("--take-turns applies to the measuring side (--role publisher or both), not a subscriber");
    }
}

// A throughput list with an empty item ("100,,1000", a trailing comma): most often a value lost in a
// script's variable, so refused rather than skipped (perfgate refuses it too).
std::vector<uint32_t> parse_throughput_list(const std::string& text, uint32_t minimum, uint32_t maximum,
        const std::string& what, const std::string& noun)
{
    std::vector<uint32_t> values = parse_separated(text, ",", minimum, maximum, what, noun);
    std::string item;
    for (const char c : text + ",")
    {
        if (c != ',')
        {
            item += c;
            continue;
        }
        if (item.find_first_not_of(" \t\r") == std::string::npos)
        {
            throw UsageError("--" + what + " has an empty item in '" + text + "'");
        }
        item.clear();
    }
    return values;
}

void check_throughput_consistency(LatencyOptions& options, bool test_time_given)
{
    const bool throughput = options.experiment == Experiment::throughput;
    if (!throughput)
    {
        if (!options.burst_sizes.empty() || !options.recovery_times_ms.empty())
        {
            throw UsageError("--burst-sizes and --recovery-times-ms apply to --experiment throughput");
        }
        if (test_time_given)  // a latency run has no test time: a script that passes one meant throughput
        {
            throw UsageError("--test-time-ms applies to --experiment throughput");
        }
        return;
    }
    if (options.turn_socket >= 0 || options.echo_delay_ns > 0 || options.loans)
    {
        throw UsageError("--take-turns, --echo-delay-ns and --loans apply to --experiment latency");
    }
    if (options.subscribers != 1)
    {
        // Received and lost would need a definition per subscriber; one-to-many is a latency experiment.
        throw UsageError("--experiment throughput takes one subscriber");
    }
    if (options.burst_sizes.empty())
    {
        options.burst_sizes = default_burst_sizes();
    }
    if (options.recovery_times_ms.empty())
    {
        options.recovery_times_ms = default_recovery_times_ms();
    }
}

}  // namespace

const char* to_string(Experiment experiment)
{
    return experiment == Experiment::throughput ? "throughput" : "latency";
}

std::vector<uint32_t> default_burst_sizes()
{
    return {100, 1000};
}

std::vector<uint32_t> default_recovery_times_ms()
{
    return {5};
}

uint32_t largest_burst(const LatencyOptions& options)
{
    uint32_t largest = 1;
    for (uint32_t size : options.burst_sizes)
    {
        largest = std::max(largest, size);
    }
    return largest;
}

const char* to_string(Role role)
{
    switch (role)
    {
        case Role::publisher: return "publisher";
        case Role::subscriber: return "subscriber";
        case Role::both: return "both";
    }
    return "?";
}

const char* to_string(Transport transport)
{
    switch (transport)
    {
        case Transport::intraprocess: return "intraprocess";
        case Transport::udpv4: return "udpv4";
        case Transport::tcpv4: return "tcpv4";
        case Transport::shm: return "shm";
    }
    return "?";
}

const char* to_string(Reliability reliability)
{
    return reliability == Reliability::reliable ? "reliable" : "best_effort";
}

std::vector<uint32_t> default_payloads()
{
    std::vector<uint32_t> payloads;
    for (uint32_t bytes = 16; bytes <= 16384; bytes *= 2)
    {
        payloads.push_back(bytes);
    }
    return payloads;
}

std::vector<uint32_t> parse_payload_list(const std::string& text, uint32_t max_bytes)
{
    return parse_separated(text, ",", 1, max_bytes, "payloads", "payload");
}

std::vector<uint32_t> parse_demands(const std::string& text, uint32_t max_bytes)
{
    return parse_separated(text, ";\n", 1, max_bytes, "demands", "payload");
}

LatencyOptions parse_latency_options(const std::vector<std::string>& arguments)
{
    LatencyOptions options;
    bool role_given = false;
    bool echo_given = false;
    bool shm_given = false;
    bool payloads_given = false;
    bool test_time_given = false;
    ArgumentReader reader(arguments);
    std::string name;
    std::function<std::string()> value;
    while (reader.next(name, value))
    {
        if (parse_measurement_option(name, value, options, payloads_given))
        {
            continue;
        }
        if (name == "version") { options.show_version = true; }
        else if (name == "help") { options.show_help = true; }
        else if (name == "role")
        {
            options.role = parse_choice<Role>(name, value(),
                    {{"publisher", Role::publisher}, {"subscriber", Role::subscriber}, {"both", Role::both}});
            role_given = true;
        }
        else if (name == "transport")
        {
            options.transport = parse_choice<Transport>(name, value(),
                    {{"intraprocess", Transport::intraprocess}, {"udpv4", Transport::udpv4},
                     {"tcpv4", Transport::tcpv4}, {"shm", Transport::shm}});
        }
        else if (name == "reliability")
        {
            options.reliability = parse_choice<Reliability>(name, value(),
                    {{"best_effort", Reliability::best_effort}, {"reliable", Reliability::reliable}});
        }
        else if (name == "domain") { options.domain = static_cast<uint32_t>(parse_unsigned(name, value(), 0, 232)); }
        else if (name == "shm") { options.shm = parse_switch(name, value()); shm_given = true; }
        else if (name == "data-sharing") { options.data_sharing = parse_switch(name, value()); }
        else if (name == "loans") { options.loans = parse_switch(name, value()); }
        else if (name == "security-dir") { options.security_dir = value(); }
        else if (name == "security-name") { options.security_name = value(); }
        else if (name == "subscribers") { options.subscribers = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 64)); }
        else if (name == "subscriber-index") { options.subscriber_index = static_cast<uint32_t>(parse_unsigned(name, value(), 0, 63)); }
        else if (name == "echo") { options.echo = parse_switch(name, value()); echo_given = true; }
        else if (name == "echo-delay-ns")
        {
            options.echo_delay_ns = static_cast<uint32_t>(parse_unsigned(name, value(), 0, 1000000000));
        }
        else if (name == "take-turns")
        {
            // never stdin, stdout or stderr
            options.turn_socket = static_cast<int>(parse_unsigned(name, value(), 3, 65535));
        }
        else if (name == "turn-samples")
        {
            options.turn_samples = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 100000000));
        }
        else if (name == "turn-warmup")
        {
            options.turn_warmup = static_cast<uint32_t>(parse_unsigned(name, value(), 0, 100000000));
        }
        else if (name == "xml") { options.xml_file = value(); }
        else if (name == "tcp-port") { options.tcp_port = static_cast<uint16_t>(parse_unsigned(name, value(), 1, 65535)); }
        else if (name == "tcp-nodelay") { options.tcp_nodelay = parse_switch(name, value()); }
        else if (name == "report") { options.report_json = value(); }
        else if (name == "experiment")
        {
            options.experiment = parse_choice<Experiment>(name, value(),
                    {{"latency", Experiment::latency}, {"throughput", Experiment::throughput}});
        }
        else if (name == "burst-sizes")
        {
            options.burst_sizes = parse_throughput_list(value(), 1, kMaxBurst, name, "burst size");
        }
        else if (name == "recovery-times-ms")
        {
            options.recovery_times_ms = parse_throughput_list(value(), 0, 60000, name, "recovery time");
        }
        else if (name == "test-time-ms")
        {
            options.test_time_ms = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 3600000));
            test_time_given = true;
        }
        else if (name == "discovery-timeout-s") { options.discovery_timeout_s = static_cast<uint32_t>(parse_unsigned(name, value(), 1, 3600)); }
        else
        {
            throw UsageError("unknown option --" + name + " (see --help)");
        }
    }
    if (options.show_version || options.show_help)
    {
        return options;
    }
    if (!role_given)
    {
        throw UsageError("--role publisher|subscriber|both is required");
    }
    check_latency_consistency(options, echo_given, shm_given, payloads_given);
    check_throughput_consistency(options, test_time_given);
    return options;
}

FloorOptions parse_floor_options(const std::vector<std::string>& arguments)
{
    FloorOptions options;
    bool payloads_given = false;
    ArgumentReader reader(arguments);
    std::string name;
    std::function<std::string()> value;
    while (reader.next(name, value))
    {
        if (parse_measurement_option(name, value, options, payloads_given))
        {
            continue;
        }
        if (name == "help") { options.show_help = true; }
        else if (name == "role")
        {
            options.role = parse_choice<FloorRole>(name, value(),
                    {{"server", FloorRole::server}, {"client", FloorRole::client}, {"both", FloorRole::both}});
        }
        else if (name == "transport")
        {
            options.transport = parse_choice<FloorTransport>(name, value(),
                    {{"udp", FloorTransport::udp}, {"tcp", FloorTransport::tcp}});
        }
        else if (name == "port") { options.port = static_cast<uint16_t>(parse_unsigned(name, value(), 1, 65535)); }
        else
        {
            throw UsageError("unknown option --" + name + " (see --help)");
        }
    }
    if (!payloads_given)
    {
        options.payloads = default_payloads();
    }
    if (options.role == FloorRole::server && !options.output_csv.empty())
    {
        throw UsageError("--output is written by the client (or --role both), not the server");
    }
    return options;
}

std::string latency_usage()
{
    return "usage: perfgate-latency --role publisher|subscriber|both [options]\n"
           "  --transport intraprocess|udpv4|tcpv4|shm   (default udpv4; intraprocess needs --role both)\n"
           "  --reliability best_effort|reliable         (default best_effort)\n"
           "  --samples N (default 10000)  --warmup N (unrecorded round trips per payload, default 100)\n"
           "  --payloads 16,32,64  or  --demands FILE (\"16;32;64\")   (default 16 to 16384, doubling)\n"
           "  --domain D (0-232)  --shm on|off  --data-sharing on|off  (udpv4: both off)\n"
           "  --loans on|off   zero copy: plain samples loaned by the writer, taken as loans (needs data sharing)\n"
           "  --security-dir DIR --security-name NAME   (DDS Security, files from perfgate.security)\n"
           "  --subscribers N --subscriber-index I --echo on|off   (one-to-many; the last one echoes)\n"
           "  --echo-delay-ns D    busy-wait D ns before each echo (a known regression, for calibration)\n"
           "  --take-turns FD --turn-samples K   measure in turns of K round trips with another\n"
           "               publisher (perfgate ab), the turn passed on the inherited Unix socket FD;\n"
           "               --turn-warmup W unrecorded round trips begin each later turn (default 0)\n"
           "  --experiment latency|throughput   (default latency: round trips)\n"
           "  --burst-sizes 100,1000 --recovery-times-ms 5 --test-time-ms 1000   (throughput: per payload,\n"
           "               burst size and recovery time, bursts for the test time; --output gets one row each)\n"
           "  --xml FILE   (XML profiles; their default profiles are the base QoS)\n"
           "  --tcp-port P (tcpv4: publisher listens on 127.0.0.1:P)  --tcp-nodelay on|off (default on)\n"
           "  --output CSV  --report JSON   (publisher / both)\n"
           "  --sample-timeout-ms T (default 1000)  --discovery-timeout-s S (default 10)\n"
           "  --version   print the Fast DDS version and exit\n"
           "exit codes: 0 done, 2 usage error, 3 could not finish\n";
}

std::string floor_usage()
{
    return "usage: perfgate-floor [--role server|client|both] [--transport udp|tcp] [--port P]\n"
           "  --samples N (default 10000)  --warmup N (default 100)  --payloads 16,32,64 | --demands FILE\n"
           "  --output CSV (client / both)  --sample-timeout-ms T (default 1000)\n"
           "Plain socket ping-pong over 127.0.0.1 (TCP with TCP_NODELAY): the machine's floor.\n"
           "exit codes: 0 done, 2 usage error, 3 could not finish\n";
}

}  // namespace perfgate
