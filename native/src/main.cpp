// perfgate-latency: round-trip latency of Fast DDS over loopback, with the options users of Fast
// DDS' LatencyTest know. Exit codes: 0 done, 2 usage error, 3 could not finish.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "both_role.hpp"
#include "endpoints.hpp"
#include "options.hpp"
#include "publisher_role.hpp"
#include "stop_request.hpp"
#include "subscriber_role.hpp"
#include "throughput_publisher.hpp"

namespace {

constexpr int kExitDone = 0;
constexpr int kExitUsage = 2;
constexpr int kExitIncomplete = 3;

// Fast DDS reads these at participant creation (default XML profiles, discovery server, builtin
// transports). The harness sets everything explicitly, so none of them may change what is measured.
void neutralise_fastdds_environment()
{
    const char* ignored[] = {"FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE",
            "FASTDDS_ENVIRONMENT_FILE", "ROS_DISCOVERY_SERVER", "ROS_SUPER_CLIENT", "FASTDDS_BUILTIN_TRANSPORTS",
            "ROS2_EASY_MODE", "FASTDDS_STATISTICS"};
    for (const char* name : ignored)
    {
        if (std::getenv(name) != nullptr)
        {
            std::cerr << "perfgate-latency: ignoring environment variable " << name << std::endl;
            ::unsetenv(name);
        }
    }
    // No DEFAULT_FASTRTPS_PROFILES.xml from the working directory either.
    ::setenv("SKIP_DEFAULT_XML", "1", 1);
}

void announce(const std::string& what)
{
    std::cout << "perfgate-latency: " << what << std::endl;
}

// The measuring side: writes what it measured even when the run could not finish.
template<typename Publisher>
int run_publisher(const perfgate::LatencyOptions& options, perfgate::StopRequest& stop)
{
    Publisher publisher(options, perfgate::participant_name(options, perfgate::Side::publisher, 0), stop);
    announce("ready");
    try
    {
        publisher.run(announce);
    }
    catch (const perfgate::RunError& error)
    {
        publisher.write_outputs(error.what());
        throw;
    }
    publisher.write_outputs("");
    return kExitDone;
}

int run(const perfgate::LatencyOptions& options, perfgate::StopRequest& stop)
{
    using perfgate::Role;
    using perfgate::Side;
    if (options.secure())
    {
        perfgate::check_security_files(options, options.security_name);
    }
    for (const std::string& path : {options.output_csv, options.report_json})
    {
        // Found out before measuring, not after minutes of it.
        if (!path.empty() && !perfgate::can_create_file(path))
        {
            throw perfgate::UsageError(path + ": cannot create the file (missing or read-only folder)");
        }
    }
    perfgate::configure_fastdds_library(options);
    switch (options.role)
    {
        case Role::both:
            perfgate::run_both(options, stop, announce);
            return kExitDone;
        case Role::subscriber:
        {
            perfgate::SubscriberRole subscriber(options, options.subscriber_index, options.echo,
                    perfgate::participant_name(options, Side::subscriber, options.subscriber_index), stop);
            announce("ready");
            subscriber.run(announce);
            return kExitDone;
        }
        case Role::publisher:
            if (options.experiment == perfgate::Experiment::throughput)
            {
                return run_publisher<perfgate::ThroughputPublisherRole>(options, stop);
            }
            return run_publisher<perfgate::PublisherRole>(options, stop);
    }
    return kExitDone;
}

}  // namespace

int main(int argc, char** argv)
{
    // First, before any thread exists: SIGTERM and SIGINT become a request to stop (exit 3 after
    // writing what was measured), taken by its own watcher thread.
    perfgate::StopRequest stop;
    perfgate::stop_when_parent_dies();
    perfgate::LatencyOptions options;
    try
    {
        options = perfgate::parse_latency_options(std::vector<std::string>(argv + 1, argv + argc));
    }
    catch (const perfgate::UsageError& error)
    {
        std::cerr << "perfgate-latency: " << error.what() << std::endl;
        return kExitUsage;
    }
    if (options.show_help)
    {
        std::cout << perfgate::latency_usage();
        return kExitDone;
    }
    if (options.show_version)
    {
        std::cout << perfgate::compat::kLibraryVersion << std::endl;
        return kExitDone;
    }
    neutralise_fastdds_environment();
    try
    {
        return run(options, stop);
    }
    catch (const perfgate::UsageError& error)
    {
        std::cerr << "perfgate-latency: " << error.what() << std::endl;
        return kExitUsage;
    }
    catch (const std::exception& error)
    {
        std::cerr << "perfgate-latency: " << error.what() << std::endl;
        return kExitIncomplete;
    }
}
