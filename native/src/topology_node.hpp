// One node of a topology: a DomainParticipant with a writer per publisher (each on its own timer
// thread, publishing every period) and a reader per subscription, taken by the node's executor
// thread (as a ROS 2 executor takes a node's subscriptions: a stalled executor delays them all, and
// its readers' KEEP_LAST histories drop what it could not take in time).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fastdds_compat.hpp"
#include "topology_message.hpp"
#include "topology_spec.hpp"
#include "topology_stats.hpp"

namespace perfgate {

using SteadyTime = std::chrono::steady_clock::time_point;

int64_t steady_ns(SteadyTime time);

// Counts the remote endpoints matched, from Fast DDS' listener threads.
class MatchCounter : public compat::dds::DataWriterListener, public compat::dds::DataReaderListener
{
public:
    void on_publication_matched(compat::dds::DataWriter*, const compat::dds::PublicationMatchedStatus& status) override;
    void on_subscription_matched(compat::dds::DataReader*,
            const compat::dds::SubscriptionMatchedStatus& status) override;
    void on_data_available(compat::dds::DataReader*) override;
    int matched() const { return matched_.load(); }
    void wake_on_data(std::condition_variable* wake, std::mutex* mutex, bool* pending);

private:
    std::atomic<int> matched_{0};
    std::condition_variable* wake_ = nullptr;
    std::mutex* mutex_ = nullptr;
    bool* pending_ = nullptr;
};

class TopologyNode
{
public:
    TopologyNode(const TopologyNodeSpec& spec, const TopologyOptions& options, uint32_t largest_payload);
    ~TopologyNode();
    TopologyNode(const TopologyNode&) = delete;
    TopologyNode& operator=(const TopologyNode&) = delete;

    // Every writer matched its subscriptions and every reader its publisher.
    bool matched() const;
    // What is still unmatched, for the error line of a discovery that did not complete.
    std::string unmatched() const;
    // Publishes from start until end; the executor takes until stop_executor().
    void start(SteadyTime start, SteadyTime end, const std::atomic<bool>& stop);
    void join_publishers();
    // Every subscription has taken its publisher's last message: a publisher sends one per period of
    // the run (its grid from start to end), so the count is known without asking it.
    bool received_last(SteadyTime start, SteadyTime end) const;
    // Stops the executor and closes the node's events file; false when it could not be written.
    bool stop_executor();
    void write_summary(std::FILE* summary, std::FILE* histogram) const;
    void write_sent(std::FILE* file) const;

private:
    struct Writer
    {
        TopologyPublisher spec;
        compat::dds::DataWriter* writer = nullptr;
        std::unique_ptr<MatchCounter> counter;
        uint64_t sent = 0;
        int64_t first_ns = 0;
        int64_t last_ns = 0;
    };
    struct Reader
    {
        TopologySubscriber spec;
        compat::dds::DataReader* reader = nullptr;
        std::unique_ptr<MatchCounter> counter;
        // what was taken, accumulated in a fixed size: nothing per message is kept
        std::unique_ptr<LatencyStats> stats;
        // the highest sequence taken, plus one: written by the executor, read by received_last()
        std::unique_ptr<std::atomic<uint64_t>> taken_up_to = std::make_unique<std::atomic<uint64_t>>(0);
    };

    void publish(Writer& writer, SteadyTime start, SteadyTime end, const std::atomic<bool>& stop);
    void execute(SteadyTime start);
    void take_all();

    const TopologyNodeSpec spec_;
    const TopologyOptions& options_;
    compat::dds::DomainParticipant* participant_ = nullptr;
    // events_<node>.csv: each late, too-late and lost message written as the executor takes it
    std::FILE* events_ = nullptr;
    bool events_written_ = true;
    std::vector<Writer> writers_;
    std::vector<Reader> readers_;
    std::vector<std::thread> publishers_;
    std::thread executor_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool pending_ = false;
    bool executor_stop_ = false;
};

}  // namespace perfgate
