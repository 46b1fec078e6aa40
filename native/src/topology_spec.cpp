#include "topology_spec.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <sstream>

namespace perfgate {
namespace {

uint64_t number(const std::string& text, const std::string& what, uint64_t low, uint64_t high)
{
    if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    {
        throw UsageError(what + ": not a whole number: " + text);
    }
    const uint64_t value = std::stoull(text);
    if (value < low || value > high)
    {
        throw UsageError(what + ": " + text + " is outside " + std::to_string(low) + " to " + std::to_string(high));
    }
    return value;
}

double real(const std::string& text, const std::string& what)
{
    // a threshold in us as perfgate wrote it (Python's repr of a float: read back exactly)
    size_t used = 0;
    double value = -1.0;
    try
    {
        value = std::stod(text, &used);
    }
    catch (const std::exception&)
    {
        used = 0;
    }
    if (used != text.size() || !std::isfinite(value) || value <= 0.0)
    {
        throw UsageError(what + ": not a positive number: " + text);
    }
    return value;
}

std::vector<std::string> split(const std::string& text, char separator)
{
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator))
    {
        if (!part.empty())
        {
            parts.push_back(part);
        }
    }
    return parts;
}

constexpr uint32_t kMaxSize = 4u << 20;
constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

}  // namespace

TopologyOptions parse_topology_options(const std::vector<std::string>& arguments)
{
    TopologyOptions options;
    for (size_t i = 0; i < arguments.size(); ++i)
    {
        const std::string& name = arguments[i];
        if (name == "--help")
        {
            options.show_help = true;
            continue;
        }
        if (i + 1 >= arguments.size())
        {
            throw UsageError(name + ": missing value (or unknown option)");
        }
        const std::string& value = arguments[++i];
        if (name == "--spec") options.spec_file = value;
        else if (name == "--nodes") options.nodes = value == "all" ? std::vector<std::string>{} : split(value, ',');
        else if (name == "--time-ms") options.time_ms = static_cast<uint32_t>(number(value, name, 1, 3600000));
        else if (name == "--domain") options.domain = static_cast<uint32_t>(number(value, name, 0, 232));
        else if (name == "--ipc")
        {
            if (value != "on" && value != "off") throw UsageError("--ipc: on or off, got " + value);
            options.intraprocess = value == "on";
        }
        else if (name == "--transport")
        {
            if (value == "udpv4") options.transport = Transport::udpv4;
            else if (value == "shm") options.transport = Transport::shm;
            else throw UsageError("--transport: udpv4 or shm, got " + value);
        }
        else if (name == "--reliability")
        {
            if (value == "reliable") options.reliability = Reliability::reliable;
            else if (value == "best_effort") options.reliability = Reliability::best_effort;
            else throw UsageError("--reliability: reliable or best_effort, got " + value);
        }
        else if (name == "--history-depth")
            options.history_depth = static_cast<uint32_t>(number(value, name, 1, 10000));
        else if (name == "--participants") options.participants = static_cast<uint32_t>(number(value, name, 1, 1000));
        else if (name == "--discovery-timeout-s")
            options.discovery_timeout_s = static_cast<uint32_t>(number(value, name, 1, 600));
        else if (name == "--summary") options.summary_csv = value;
        else if (name == "--histogram") options.histogram_csv = value;
        else if (name == "--events-dir") options.events_dir = value;
        else if (name == "--sent") options.sent_csv = value;
        else if (name == "--matched") options.matched_file = value;
        else if (name == "--allocator") options.allocator_csv = value;
        else if (name == "--sampling-ms") options.sampling_ms = static_cast<uint32_t>(number(value, name, 10, 60000));
        else if (name == "--barrier") options.barrier = static_cast<uint32_t>(number(value, name, 1, 1000));
        else if (name == "--stall")
        {
            const std::vector<std::string> parts = split(value, ',');
            if (parts.size() != 3) throw UsageError("--stall: NODE,AT_MS,FOR_MS, got " + value);
            options.stall_node = parts[0];
            options.stall_at_ms = static_cast<uint32_t>(number(parts[1], name, 0, 3600000));
            options.stall_ms = static_cast<uint32_t>(number(parts[2], name, 1, 600000));
        }
        else if (name == "--publish-delay-ns") options.publish_delay_ns = number(value, name, 0, 1000000000ull);
        else throw UsageError("unknown option " + name);
    }
    if (!options.show_help && (options.spec_file.empty() || options.summary_csv.empty() ||
                                      options.histogram_csv.empty() || options.events_dir.empty() ||
                                      options.sent_csv.empty()))
    {
        throw UsageError("--spec, --summary, --histogram, --events-dir and --sent are required");
    }
    return options;
}

std::vector<TopologyNodeSpec> parse_topology_spec(const std::string& text)
{
    std::vector<TopologyNodeSpec> nodes;
    std::stringstream lines(text);
    std::string line;
    size_t number_of_line = 0;
    while (std::getline(lines, line))
    {
        ++number_of_line;
        const std::vector<std::string> words = split(line, ' ');
        const std::string where = "line " + std::to_string(number_of_line);
        if (words.empty())
        {
            continue;
        }
        if (words[0] == "node" && words.size() == 2)
        {
            nodes.push_back(TopologyNodeSpec{words[1], {}, {}});
        }
        else if (words[0] == "pub" && words.size() == 5 && !nodes.empty())
        {
            nodes.back().publishers.push_back(TopologyPublisher{words[1], number(words[2], where, 100, 3600000000ull),
                    static_cast<uint32_t>(number(words[3], where, 0, kMaxSize)),
                    static_cast<uint32_t>(number(words[4], where, 0, kMaxU32))});
        }
        else if (words[0] == "sub" && words.size() == 7 && !nodes.empty())
        {
            nodes.back().subscribers.push_back(TopologySubscriber{
                    static_cast<uint32_t>(number(words[1], where, 0, kMaxU32)), words[2],
                    static_cast<uint32_t>(number(words[3], where, 0, kMaxSize)),
                    number(words[4], where, 100, 3600000000ull), real(words[5], where), real(words[6], where)});
        }
        else
        {
            throw UsageError(where + ": not a node, pub or sub line");
        }
    }
    if (nodes.empty())
    {
        throw UsageError("the topology has no node");
    }
    return nodes;
}

std::string topology_usage()
{
    return "perfgate-topology: runs nodes of a topology (perfgate topology writes --spec) on Fast DDS\n"
           "  --spec FILE              node / pub / sub lines\n"
           "  --nodes all|A,B          the nodes this process runs (default all)\n"
           "  --time-ms N              how long to publish once every endpoint matched (default 10000)\n"
           "  --domain N, --ipc on|off, --transport udpv4|shm, --reliability reliable|best_effort\n"
           "  --history-depth N        KEEP_LAST depth of writers and readers (default 10)\n"
           "  --participants N         participants in the domain, all processes\n"
           "  --discovery-timeout-s N  (default 30)\n"
           "  --summary FILE           subscription,received,late,too_late,lost,mean_us,m2_us2,min_us,max_us\n"
           "  --histogram FILE         subscription,bin,count: 64 log-spaced bins of the latency in ns per octave\n"
           "  --events-dir DIR         events_<node>.csv: received_ns,subscription,code,sequence,value as they happen\n"
           "                           (code 1 late, 2 too late: value the latency in ns; 3 lost: sequence the\n"
           "                           first lost, value how many)\n"
           "  --sent FILE              node,topic,sent,first_ns,last_ns per publisher\n"
           "  --matched FILE           the steady-clock ns at which every endpoint had matched\n"
           "  --allocator FILE         time_ns,arena_kb,in_use_kb,mmap_kb (mallinfo2) every --sampling-ms (500)\n"
           "  --barrier N              start when N matched_*.txt files are beside --matched (default 1)\n"
           "  --stall NODE,AT_MS,FOR_MS  tests only: that node's executor sleeps once\n"
           "  --publish-delay-ns D     tests only: every publish busy-waits D ns after its timestamp\n"
           "Prints 'perfgate-topology: ready', then 'perfgate-topology: matched' once every endpoint matched.\n"
           "Exit codes: 0 done, 2 usage error, 3 could not finish.\n";
}

}  // namespace perfgate
