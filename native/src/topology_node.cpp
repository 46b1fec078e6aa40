#include "topology_node.hpp"

#include <map>
#include <stdexcept>

namespace perfgate {
namespace dds = compat::dds;
namespace {

constexpr const char* kLoopback = "127.0.0.1";
constexpr const char* kTopicPrefix = "perfgate_topology_";
// How often an idle executor looks at the clock (a stall due, the end of the run).
constexpr std::chrono::milliseconds kExecutorTick{10};

dds::DomainParticipantQos participant_qos(const TopologyOptions& options, const std::string& name)
{
    dds::DomainParticipantQos qos;
    qos.name(name);
    compat::use_simple_discovery(qos);
    qos.wire_protocol().builtin.avoid_builtin_multicast = true;
    qos.wire_protocol().builtin.initialPeersList.clear();
    qos.wire_protocol().default_multicast_locator_list.clear();
    qos.wire_protocol().builtin.metatrafficMulticastLocatorList.clear();
    qos.transport().use_builtin_transports = false;
    qos.transport().user_transports.clear();
    if (options.transport == Transport::shm)
    {
        qos.wire_protocol().builtin.metatrafficUnicastLocatorList.clear();
        qos.wire_protocol().default_unicast_locator_list.clear();
        qos.transport().user_transports.push_back(std::make_shared<compat::transport::SharedMemTransportDescriptor>());
        return qos;
    }
    // UDP on 127.0.0.1 only; discovery looks for as many participant ids as the domain holds.
    auto udp = std::make_shared<compat::transport::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.emplace_back(kLoopback);
    udp->maxInitialPeersRange = options.participants + 4;
    qos.transport().user_transports.push_back(udp);
    auto& builtin = qos.wire_protocol().builtin;
    builtin.initialPeersList.push_back(compat::udpv4_loopback(0));
    builtin.metatrafficUnicastLocatorList.clear();
    builtin.metatrafficUnicastLocatorList.push_back(compat::udpv4_loopback(0));
    qos.wire_protocol().default_unicast_locator_list.clear();
    qos.wire_protocol().default_unicast_locator_list.push_back(compat::udpv4_loopback(0));
    return qos;
}

template<typename EndpointQos>
void apply_policies(const TopologyOptions& options, EndpointQos& qos)
{
    qos.reliability().kind = options.reliability == Reliability::reliable ? dds::RELIABLE_RELIABILITY_QOS
                                                                           : dds::BEST_EFFORT_RELIABILITY_QOS;
    qos.durability().kind = dds::VOLATILE_DURABILITY_QOS;
    qos.history().kind = dds::KEEP_LAST_HISTORY_QOS;
    qos.history().depth = static_cast<int32_t>(options.history_depth);
    qos.data_sharing().off();
}

}  // namespace

int64_t steady_ns(SteadyTime time)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

void MatchCounter::on_publication_matched(dds::DataWriter*, const dds::PublicationMatchedStatus& status)
{
    matched_ = status.current_count;
}

void MatchCounter::on_subscription_matched(dds::DataReader*, const dds::SubscriptionMatchedStatus& status)
{
    matched_ = status.current_count;
}

void MatchCounter::wake_on_data(std::condition_variable* wake, std::mutex* mutex, bool* pending)
{
    wake_ = wake;
    mutex_ = mutex;
    pending_ = pending;
}

void MatchCounter::on_data_available(dds::DataReader*)
{
    if (wake_ == nullptr)
    {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(*mutex_);
        *pending_ = true;
    }
    wake_->notify_one();
}

TopologyNode::TopologyNode(const TopologyNodeSpec& spec, const TopologyOptions& options, uint32_t largest_payload)
    : spec_(spec)
    , options_(options)
{
    auto* factory = dds::DomainParticipantFactory::get_instance();
    participant_ = factory->create_participant(options.domain, participant_qos(options, spec.name));
    if (participant_ == nullptr)
    {
        throw std::runtime_error("node " + spec.name + ": Fast DDS refused the participant");
    }
    dds::TypeSupport type(new TopologyMessageType(largest_payload));
    if (!compat::succeeded(type.register_type(participant_)))
    {
        throw std::runtime_error("node " + spec.name + ": Fast DDS refused the message type");
    }
    std::map<std::string, dds::Topic*> topics;
    auto topic = [&](const std::string& name) {
        auto found = topics.find(name);
        if (found != topics.end())
        {
            return found->second;
        }
        dds::Topic* created = participant_->create_topic(kTopicPrefix + name, type.get_type_name(),
                dds::TOPIC_QOS_DEFAULT);
        if (created == nullptr)
        {
            throw std::runtime_error("node " + spec.name + ": Fast DDS refused topic " + name);
        }
        return topics[name] = created;
    };
    dds::Publisher* publisher = participant_->create_publisher(dds::PUBLISHER_QOS_DEFAULT);
    dds::Subscriber* subscriber = participant_->create_subscriber(dds::SUBSCRIBER_QOS_DEFAULT);
    if (publisher == nullptr || subscriber == nullptr)
    {
        throw std::runtime_error("node " + spec.name + ": Fast DDS refused a publisher or subscriber");
    }
    writers_.resize(spec.publishers.size());
    for (size_t i = 0; i < spec.publishers.size(); ++i)
    {
        Writer& writer = writers_[i];
        writer.spec = spec.publishers[i];
        writer.counter = std::make_unique<MatchCounter>();
        dds::DataWriterQos qos = dds::DATAWRITER_QOS_DEFAULT;
        apply_policies(options, qos);
        writer.writer = publisher->create_datawriter(topic(writer.spec.topic), qos, writer.counter.get());
        if (writer.writer == nullptr)
        {
            throw std::runtime_error("node " + spec.name + ": Fast DDS refused the writer of " + writer.spec.topic);
        }
    }
    const std::string events_path = options.events_dir + "/events_" + spec.name + ".csv";
    events_ = std::fopen(events_path.c_str(), "w");
    if (events_ == nullptr)
    {
        throw std::runtime_error(events_path + ": cannot write");
    }
    readers_.resize(spec.subscribers.size());
    for (size_t i = 0; i < spec.subscribers.size(); ++i)
    {
        Reader& reader = readers_[i];
        reader.spec = spec.subscribers[i];
        reader.counter = std::make_unique<MatchCounter>();
        reader.stats = std::make_unique<LatencyStats>(reader.spec.late_us, reader.spec.too_late_us);
        reader.counter->wake_on_data(&wake_, &mutex_, &pending_);
        dds::DataReaderQos qos = dds::DATAREADER_QOS_DEFAULT;
        apply_policies(options, qos);
        reader.reader = subscriber->create_datareader(topic(reader.spec.topic), qos, reader.counter.get());
        if (reader.reader == nullptr)
        {
            throw std::runtime_error("node " + spec.name + ": Fast DDS refused the reader of " + reader.spec.topic);
        }
    }
}

TopologyNode::~TopologyNode()
{
    for (std::thread& thread : publishers_)
    {
        if (thread.joinable())
        {
            thread.join();
        }
    }
    stop_executor();
    if (participant_ != nullptr)
    {
        participant_->delete_contained_entities();
        dds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
    }
}

bool TopologyNode::matched() const
{
    for (const Writer& writer : writers_)
    {
        if (writer.counter->matched() < static_cast<int>(writer.spec.subscribers))
        {
            return false;
        }
    }
    for (const Reader& reader : readers_)
    {
        if (reader.counter->matched() < 1)
        {
            return false;
        }
    }
    return true;
}

std::string TopologyNode::unmatched() const
{
    std::string text;
    for (const Writer& writer : writers_)
    {
        if (writer.counter->matched() < static_cast<int>(writer.spec.subscribers))
        {
            text += " " + spec_.name + " publishing " + writer.spec.topic + " (" +
                    std::to_string(writer.counter->matched()) + " of " + std::to_string(writer.spec.subscribers) + ")";
        }
    }
    for (const Reader& reader : readers_)
    {
        if (reader.counter->matched() < 1)
        {
            text += " " + spec_.name + " subscribing " + reader.spec.topic;
        }
    }
    return text;
}

void TopologyNode::start(SteadyTime start, SteadyTime end, const std::atomic<bool>& stop)
{
    executor_ = std::thread([this, start]() { execute(start); });
    for (Writer& writer : writers_)
    {
        publishers_.emplace_back([this, &writer, start, end, &stop]() { publish(writer, start, end, stop); });
    }
}

void TopologyNode::publish(Writer& writer, SteadyTime start, SteadyTime end, const std::atomic<bool>& stop)
{
    TopologyMessage message;
    message.payload.assign(writer.spec.size, 0xA5);
    const std::chrono::microseconds period(writer.spec.period_us);
    // On a fixed grid from the start: a late wake-up is published at once and does not shift the
    // messages after it, so the rate is the requested one as long as the machine keeps up.
    SteadyTime next = start;
    while (!stop.load() && next < end)
    {
        std::this_thread::sleep_until(next);
        message.sequence = writer.sent;
        message.sent_ns = steady_ns(std::chrono::steady_clock::now());
        if (options_.publish_delay_ns > 0)
        {
            // Spinning, not sleeping: the delay is CPU time and latency as a slower middleware's would be,
            // and a sleep would wake up late by a varying amount on a loaded machine.
            const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.publish_delay_ns);
            while (std::chrono::steady_clock::now() < until)
            {
            }
        }
        compat::write_sample(*writer.writer, &message);
        if (writer.sent == 0)
        {
            writer.first_ns = message.sent_ns;
        }
        writer.last_ns = message.sent_ns;
        ++writer.sent;
        next += period;
    }
}

void TopologyNode::join_publishers()
{
    for (std::thread& thread : publishers_)
    {
        thread.join();
    }
    publishers_.clear();
}

void TopologyNode::execute(SteadyTime start)
{
    bool stall_due = !options_.stall_node.empty() && options_.stall_node == spec_.name;
    const SteadyTime stall_at = start + std::chrono::milliseconds(options_.stall_at_ms);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!executor_stop_)
    {
        wake_.wait_for(lock, kExecutorTick, [this]() { return pending_ || executor_stop_; });
        pending_ = false;
        lock.unlock();
        if (stall_due && std::chrono::steady_clock::now() >= stall_at)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(options_.stall_ms));
            stall_due = false;
        }
        take_all();
        lock.lock();
    }
    lock.unlock();
    take_all();
}

void TopologyNode::take_all()
{
    TopologyMessage message;
    dds::SampleInfo info;
    for (Reader& reader : readers_)
    {
        while (compat::succeeded(reader.reader->take_next_sample(&message, &info)))
        {
            if (info.valid_data)
            {
                const int64_t received_ns = steady_ns(std::chrono::steady_clock::now());
                uint64_t skipped = 0;
                const MessageKind kind = reader.stats->add(message.sequence, received_ns - message.sent_ns, skipped);
                // late or too late before lost, as perfgate orders events of one instant
                if (kind != MessageKind::on_time && std::fprintf(events_, "%lld,%u,%d,%llu,%lld\n",
                            static_cast<long long>(received_ns), reader.spec.index, static_cast<int>(kind),
                            static_cast<unsigned long long>(message.sequence),
                            static_cast<long long>(received_ns - message.sent_ns)) < 0)
                {
                    events_written_ = false;
                }
                if (skipped > 0 && std::fprintf(events_, "%lld,%u,3,%llu,%llu\n", static_cast<long long>(received_ns),
                            reader.spec.index, static_cast<unsigned long long>(message.sequence - skipped),
                            static_cast<unsigned long long>(skipped)) < 0)
                {
                    events_written_ = false;
                }
                if (message.sequence + 1 > reader.taken_up_to->load())
                {
                    reader.taken_up_to->store(message.sequence + 1);
                }
            }
        }
    }
}

bool TopologyNode::received_last(SteadyTime start, SteadyTime end) const
{
    const auto run_us = std::chrono::duration_cast<std::chrono::microseconds>(end - start).count();
    for (const Reader& reader : readers_)
    {
        const auto period_us = static_cast<int64_t>(reader.spec.period_us);
        const auto due = static_cast<uint64_t>((run_us + period_us - 1) / period_us);  // grid points before end
        if (reader.taken_up_to->load() < due)
        {
            return false;
        }
    }
    return true;
}

bool TopologyNode::stop_executor()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        executor_stop_ = true;
    }
    wake_.notify_one();
    if (executor_.joinable())
    {
        executor_.join();
    }
    if (events_ != nullptr)
    {
        events_written_ = std::fclose(events_) == 0 && events_written_;
        events_ = nullptr;
    }
    return events_written_;
}

void TopologyNode::write_summary(std::FILE* summary, std::FILE* histogram) const
{
    for (const Reader& reader : readers_)
    {
        reader.stats->write_summary(summary, reader.spec.index);
        reader.stats->write_histogram(histogram, reader.spec.index);
    }
}

void TopologyNode::write_sent(std::FILE* file) const
{
    for (const Writer& writer : writers_)
    {
        std::fprintf(file, "%s,%s,%llu,%lld,%lld\n", spec_.name.c_str(), writer.spec.topic.c_str(),
                static_cast<unsigned long long>(writer.sent), static_cast<long long>(writer.first_ns),
                static_cast<long long>(writer.last_ns));
    }
}

}  // namespace perfgate
