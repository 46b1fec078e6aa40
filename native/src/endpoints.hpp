// One participant with the harness's two topics (ping, pong), one writer and one reader, set up
// for the transport, reliability and security the options ask for. Everything loopback only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>

#include "fastdds_compat.hpp"
#include "options.hpp"
#include "stop_request.hpp"

namespace perfgate {

// The run could not finish (discovery timeout, lost peer, incompatible QoS, Fast DDS refused an
// entity): exit code 3.
class RunError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

enum class Side { publisher, subscriber };

// Matching and failure events from Fast DDS' listener threads, read by the role's main thread.
// Roles derive from it to add their own state under the same mutex and condition variable.
class MatchMonitor
{
public:
    void writer_matched(int current_count, int count_change);
    void reader_matched(int current_count, int count_change);
    void incompatible_qos(const std::string& description);
    // Any other reason the run cannot go on, found on a Fast DDS thread (where nothing may throw).
    void failed(const std::string& description);
    // SIGTERM or SIGINT (from the StopRequest's watcher): every wait ends, failure() says why.
    void interrupt();
    // Lock-free: checked once per round trip.
    bool interrupted() const { return interrupted_.load(std::memory_order_relaxed); }

    // Waits until our writer and our reader each matched `count` remote endpoints; false at the
    // deadline or on a failure.
    bool wait_for_matches(int count, std::chrono::steady_clock::time_point deadline);

    int matched_writers() const;
    int matched_readers() const;
    // Empty while nothing went wrong; otherwise why the run cannot go on.
    std::string failure() const;

protected:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    int matched_writers_ = 0;  // remote readers matched by our writer
    int matched_readers_ = 0;  // remote writers matched by our reader
    std::string failure_;
    std::atomic<bool> interrupted_{false};
};

class WriterListener : public compat::dds::DataWriterListener
{
public:
    explicit WriterListener(MatchMonitor& monitor);
    void on_publication_matched(compat::dds::DataWriter* writer,
            const compat::dds::PublicationMatchedStatus& status) override;
    void on_offered_incompatible_qos(compat::dds::DataWriter* writer,
            const compat::dds::OfferedIncompatibleQosStatus& status) override;

private:
    MatchMonitor& monitor_;
};

// Reports matching and incompatible QoS; roles add on_data_available.
class ReaderListenerBase : public compat::dds::DataReaderListener
{
public:
    explicit ReaderListenerBase(MatchMonitor& monitor);
    void on_subscription_matched(compat::dds::DataReader* reader,
            const compat::dds::SubscriptionMatchedStatus& status) override;
    void on_requested_incompatible_qos(compat::dds::DataReader* reader,
            const compat::dds::RequestedIncompatibleQosStatus& status) override;

private:
    MatchMonitor& monitor_;
};

// Names of the two topics: the publisher writes ping and reads pong, subscribers the reverse.
constexpr const char* kPingTopic = "perfgate_latency_ping";
constexpr const char* kPongTopic = "perfgate_latency_pong";

class Endpoints
{
public:
    // writer_created is called with the writer before the reader exists, so a reader listener
    // that answers on the writer never sees it missing.
    Endpoints(const LatencyOptions& options, Side side, uint32_t subscriber_index, const std::string& participant_name,
            compat::dds::DataWriterListener& writer_listener, compat::dds::DataReaderListener& reader_listener,
            const std::function<void(compat::dds::DataWriter&)>& writer_created);
    ~Endpoints();
    Endpoints(const Endpoints&) = delete;
    Endpoints& operator=(const Endpoints&) = delete;

    compat::dds::DataWriter& writer() { return *writer_; }
    compat::dds::DataReader& reader() { return *reader_; }

private:
    compat::dds::DomainParticipant* participant_ = nullptr;
    compat::dds::DataWriter* writer_ = nullptr;
    compat::dds::DataReader* reader_ = nullptr;
};

// The participant's name; with DDS Security also the name of its identity files.
std::string participant_name(const LatencyOptions& options, Side side, uint32_t subscriber_index);

// Process-wide Fast DDS setup, once, before any participant: intra-process delivery and the
// explicitly loaded XML profiles file. Throws UsageError for an unreadable XML file.
void configure_fastdds_library(const LatencyOptions& options);

// The DDS Security files a participant named `name` uses in options.security_dir.
// Throws UsageError naming the first missing file.
void check_security_files(const LatencyOptions& options, const std::string& name);

}  // namespace perfgate
