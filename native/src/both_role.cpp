#include "both_role.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include "publisher_role.hpp"
#include "subscriber_role.hpp"
#include "throughput_publisher.hpp"

namespace perfgate {
namespace {

constexpr std::chrono::milliseconds kEndMarkerWait(2000);

template<typename Publisher>
void run_both_with(const LatencyOptions& options, StopRequest& stop,
        const std::function<void(const std::string&)>& announce)
{
    // Subscribers first, so that they listen before the publisher's first handshake.
    std::vector<std::unique_ptr<SubscriberRole>> subscribers;
    for (uint32_t index = 0; index < options.subscribers; ++index)
    {
        const bool echo = index + 1 == options.subscribers;
        subscribers.push_back(std::make_unique<SubscriberRole>(
                options, index, echo, participant_name(options, Side::subscriber, index), stop));
    }
    auto publisher = std::make_unique<Publisher>(options, participant_name(options, Side::publisher, 0), stop);
    announce("ready");
    try
    {
        publisher->run(announce);
    }
    catch (const RunError& error)
    {
        publisher->write_outputs(error.what());
        throw;
    }
    // The publisher's writer must outlive our listeners' taking its end marker: Fast DDS drops what a
    // reader received from a writer that went away but had not yet handed to its listener, and a
    // listener can be behind (busy with the pings before it: an injected echo delay, a loaded
    // machine). Bounded, so that a subscriber that will never see it does not hold the run.
    for (auto& subscriber : subscribers)
    {
        subscriber->await_end_marker(kEndMarkerWait);
    }
    publisher->write_outputs("");
    publisher.reset();
    // The subscribers have seen the handshake and the end marker by now: their run() returns at
    // once, or reports why it could not (for instance incompatible QoS on their side).
    for (auto& subscriber : subscribers)
    {
        subscriber->run([](const std::string&) {});
    }
}

}  // namespace

void run_both(const LatencyOptions& options, StopRequest& stop,
        const std::function<void(const std::string&)>& announce)
{
    if (options.experiment == Experiment::throughput)
    {
        run_both_with<ThroughputPublisherRole>(options, stop, announce);
    }
    else
    {
        run_both_with<PublisherRole>(options, stop, announce);
    }
}

}  // namespace perfgate
