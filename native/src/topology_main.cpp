// perfgate-topology: nodes of a topology (perfgate topology's spec) on Fast DDS, each a participant
// publishing at its periods and taking its subscriptions; every message received classified by its
// latency (the publisher's and the subscriber's readings of the monotonic clock) and accumulated in a
// fixed size per subscription (topology_stats.hpp), its late, too-late and lost messages written as
// they happen: memory does not grow with the run's length. Exit codes: 0 done, 2 usage
// error, 3 could not finish (what was received is still written).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stop_request.hpp"
#include "topology_allocator.hpp"
#include "topology_node.hpp"
#include "topology_spec.hpp"

namespace {

constexpr int kExitDone = 0;
constexpr int kExitUsage = 2;
constexpr int kExitIncomplete = 3;
// After the last message is published: time for what is in flight to arrive and be taken.
// How long after its end a run waits for messages still on their way. It ends sooner, as soon as every
// subscription of the process took its publisher's last message; only a message lost for good (best
// effort) makes it wait the whole time. A fixed 200 ms could end a subscriber before the last messages
// of a publisher that a loaded machine kept off the CPU for longer.
constexpr std::chrono::milliseconds kDrainLimit{3000};
// From the last process's match to the common start: time for every process to see it.
constexpr std::chrono::milliseconds kStartMargin{100};
using perfgate::SteadyTime;

void announce(const std::string& what)
{
    std::cout << "perfgate-topology: " << what << std::endl;
}

// Fast DDS reads these at participant creation; the harness sets everything explicitly.
void neutralise_fastdds_environment()
{
    for (const char* name : {"FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE",
                 "FASTDDS_ENVIRONMENT_FILE", "ROS_DISCOVERY_SERVER", "ROS_SUPER_CLIENT", "FASTDDS_BUILTIN_TRANSPORTS",
                 "ROS2_EASY_MODE", "FASTDDS_STATISTICS"})
    {
        ::unsetenv(name);
    }
    ::setenv("SKIP_DEFAULT_XML", "1", 1);
}

std::vector<perfgate::TopologyNodeSpec> selected_nodes(const perfgate::TopologyOptions& options)
{
    std::ifstream file(options.spec_file);
    if (!file)
    {
        throw perfgate::UsageError(options.spec_file + ": cannot read the spec");
    }
    std::stringstream text;
    text << file.rdbuf();
    std::vector<perfgate::TopologyNodeSpec> all = perfgate::parse_topology_spec(text.str());
    if (options.nodes.empty())
    {
        return all;
    }
    std::vector<perfgate::TopologyNodeSpec> chosen;
    for (const std::string& name : options.nodes)
    {
        auto found = std::find_if(all.begin(), all.end(), [&](const auto& node) { return node.name == name; });
        if (found == all.end())
        {
            throw perfgate::UsageError("--nodes: no node " + name + " in the spec");
        }
        chosen.push_back(*found);
    }
    return chosen;
}

uint32_t largest_payload(const std::vector<perfgate::TopologyNodeSpec>& nodes)
{
    uint32_t largest = 0;
    for (const auto& node : nodes)
    {
        for (const auto& publisher : node.publishers)
        {
            largest = std::max(largest, publisher.size);
        }
        for (const auto& subscriber : node.subscribers)
        {
            largest = std::max(largest, subscriber.size);
        }
    }
    return largest;
}

bool write_outputs(const perfgate::TopologyOptions& options,
        const std::vector<std::unique_ptr<perfgate::TopologyNode>>& nodes)
{
    std::FILE* summary = std::fopen(options.summary_csv.c_str(), "w");
    std::FILE* histogram = std::fopen(options.histogram_csv.c_str(), "w");
    std::FILE* sent = std::fopen(options.sent_csv.c_str(), "w");
    bool written = summary != nullptr && histogram != nullptr && sent != nullptr;
    if (written)
    {
        std::fputs("subscription,received,late,too_late,lost,mean_us,m2_us2,min_us,max_us\n", summary);
        std::fputs("subscription,bin,count\n", histogram);
        std::fputs("node,topic,sent,first_ns,last_ns\n", sent);
        for (const auto& node : nodes)
        {
            node->write_summary(summary, histogram);
            node->write_sent(sent);
        }
    }
    for (std::FILE* file : {summary, histogram, sent})
    {
        if (file != nullptr && std::fclose(file) != 0)
        {
            written = false;
        }
    }
    return written;
}

// Writes this process's matched time (atomically: a rename) and, with --barrier N, waits for N of
// them beside it; the start is the latest plus kStartMargin, so every process computes the same one.
SteadyTime common_start(const perfgate::TopologyOptions& options, SteadyTime matched_at, SteadyTime deadline,
        const std::atomic<bool>& stopping)
{
    if (options.matched_file.empty())
    {
        return matched_at;
    }
    const std::filesystem::path path(options.matched_file);
    {
        std::ofstream file(path.string() + ".partial");
        file << perfgate::steady_ns(matched_at) << "\n";
        if (!file)
        {
            throw std::runtime_error(options.matched_file + ": cannot write");
        }
    }
    std::filesystem::rename(path.string() + ".partial", path);
    while (true)
    {
        std::vector<int64_t> times;
        for (const auto& entry : std::filesystem::directory_iterator(path.parent_path()))
        {
            const std::string name = entry.path().filename().string();
            if (name.rfind("matched_", 0) == 0 && entry.path().extension() == ".txt")
            {
                std::ifstream file(entry.path());
                int64_t value = 0;
                if (file >> value)
                {
                    times.push_back(value);
                }
            }
        }
        if (times.size() >= options.barrier)
        {
            const auto latest = std::chrono::nanoseconds(*std::max_element(times.begin(), times.end()));
            return SteadyTime(std::chrono::duration_cast<SteadyTime::duration>(latest)) + kStartMargin;
        }
        if (stopping.load())
        {
            throw std::runtime_error(perfgate::kInterruptedBySignal);
        }
        if (std::chrono::steady_clock::now() > deadline)
        {
            throw std::runtime_error("the other processes did not match within " +
                    std::to_string(options.discovery_timeout_s) + " s (" + std::to_string(times.size()) + " of " +
                    std::to_string(options.barrier) + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

int run(const perfgate::TopologyOptions& options, perfgate::StopRequest& stop)
{
    const std::vector<perfgate::TopologyNodeSpec> specs = selected_nodes(options);
    perfgate::AllocatorSampler allocator(options.allocator_csv, std::chrono::milliseconds(options.sampling_ms));
    perfgate::compat::set_intraprocess_delivery(options.intraprocess);
    std::atomic<bool> stopping{false};
    auto subscription = stop.subscribe([&stopping]() { stopping = true; });
    std::vector<std::unique_ptr<perfgate::TopologyNode>> nodes;
    for (const auto& spec : specs)
    {
        nodes.push_back(std::make_unique<perfgate::TopologyNode>(spec, options, largest_payload(specs)));
    }
    announce("ready");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.discovery_timeout_s);
    auto all_matched = [&nodes]() {
        return std::all_of(nodes.begin(), nodes.end(), [](const auto& node) { return node->matched(); });
    };
    while (!all_matched())
    {
        if (stopping.load())
        {
            throw std::runtime_error(perfgate::kInterruptedBySignal);
        }
        if (std::chrono::steady_clock::now() > deadline)
        {
            std::string unmatched;
            for (const auto& node : nodes)
            {
                unmatched += node->unmatched();
            }
            throw std::runtime_error("discovery did not complete within " +
                    std::to_string(options.discovery_timeout_s) + " s; unmatched:" + unmatched);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const auto matched_at = std::chrono::steady_clock::now();
    announce("matched");
    const auto start = common_start(options, matched_at, deadline, stopping);
    std::this_thread::sleep_until(start);
    const auto end = start + std::chrono::milliseconds(options.time_ms);
    for (auto& node : nodes)
    {
        node->start(start, end, stopping);
    }
    // The whole time, also in a process without publishers (its subscriptions take until the end).
    while (!stopping.load() && std::chrono::steady_clock::now() < end)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (auto& node : nodes)
    {
        node->join_publishers();
    }
    const auto drained_by = std::chrono::steady_clock::now() + kDrainLimit;
    while (!stopping.load() && std::chrono::steady_clock::now() < drained_by &&
            !std::all_of(nodes.begin(), nodes.end(), [&](const auto& node) { return node->received_last(start, end); }))
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    bool events_written = true;
    for (auto& node : nodes)
    {
        events_written = node->stop_executor() && events_written;
    }
    if (!events_written)
    {
        throw std::runtime_error(options.events_dir + ": cannot write the events");
    }
    if (!allocator.finish() || !write_outputs(options, nodes))
    {
        throw std::runtime_error(options.summary_csv + ": cannot write the results");
    }
    if (stopping.load())
    {
        throw std::runtime_error(perfgate::kInterruptedBySignal);
    }
    return kExitDone;
}

}  // namespace

int main(int argc, char** argv)
{
    perfgate::StopRequest stop;
    perfgate::stop_when_parent_dies();
    perfgate::TopologyOptions options;
    try
    {
        options = perfgate::parse_topology_options(std::vector<std::string>(argv + 1, argv + argc));
        if (options.show_help)
        {
            std::cout << perfgate::topology_usage();
            return kExitDone;
        }
        neutralise_fastdds_environment();
        return run(options, stop);
    }
    catch (const perfgate::UsageError& error)
    {
        std::cerr << "perfgate-topology: " << error.what() << std::endl;
        return kExitUsage;
    }
    catch (const std::exception& error)
    {
        std::cerr << "perfgate-topology: " << error.what() << std::endl;
        return kExitIncomplete;
    }
}
