#include "endpoints.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <vector>

#include "latency_type.hpp"
#include "plain_sample.hpp"

namespace perfgate {
namespace dds = compat::dds;
namespace {

constexpr const char* kLoopback = "127.0.0.1";

std::vector<std::string> security_files(const LatencyOptions& options, const std::string& name)
{
    const std::string dir = options.security_dir + "/";
    return {dir + "ca_cert.pem", dir + name + "_cert.pem", dir + name + "_key.pem", dir + "governance.p7s",
            dir + "permissions_" + name + ".p7s"};
}

void add_security(const LatencyOptions& options, const std::string& name, dds::DomainParticipantQos& qos)
{
    const std::vector<std::string> files = security_files(options, name);
    auto& properties = qos.properties().properties();
    auto add = [&properties](const std::string& key, const std::string& value) {
        properties.emplace_back(key, value);
    };
    add("dds.sec.auth.plugin", "builtin.PKI-DH");
    add("dds.sec.auth.builtin.PKI-DH.identity_ca", "file://" + files[0]);
    add("dds.sec.auth.builtin.PKI-DH.identity_certificate", "file://" + files[1]);
    add("dds.sec.auth.builtin.PKI-DH.private_key", "file://" + files[2]);
    add("dds.sec.access.plugin", "builtin.Access-Permissions");
    add("dds.sec.access.builtin.Access-Permissions.permissions_ca", "file://" + files[0]);
    add("dds.sec.access.builtin.Access-Permissions.governance", "file://" + files[3]);
    add("dds.sec.access.builtin.Access-Permissions.permissions", "file://" + files[4]);
    add("dds.sec.crypto.plugin", "builtin.AES-GCM-GMAC");
}

// Discovery and user data over UDP on 127.0.0.1 only: explicit unicast locators (their ports
// derived from domain and participant id), initial peers on loopback, and no multicast locator.
// With both locator lists given, Fast DDS does not add its default multicast ones.
void use_udp_loopback(const LatencyOptions& options, dds::DomainParticipantQos& qos)
{
    auto udp = std::make_shared<compat::transport::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.emplace_back(kLoopback);
    // Initial peers cover this many participant ids per domain: every subscriber plus room for others.
    udp->maxInitialPeersRange = options.subscribers + 8;
    qos.transport().user_transports.push_back(udp);

    auto& builtin = qos.wire_protocol().builtin;
    builtin.initialPeersList.clear();
    builtin.initialPeersList.push_back(compat::udpv4_loopback(0));
    builtin.metatrafficUnicastLocatorList.clear();
    builtin.metatrafficUnicastLocatorList.push_back(compat::udpv4_loopback(0));
    builtin.metatrafficMulticastLocatorList.clear();
    qos.wire_protocol().default_unicast_locator_list.clear();
    qos.wire_protocol().default_unicast_locator_list.push_back(compat::udpv4_loopback(0));
}

// TCP on 127.0.0.1: the publisher listens on the given port, subscribers only connect to it.
void use_tcp_loopback(const LatencyOptions& options, Side side, uint32_t subscriber_index,
        dds::DomainParticipantQos& qos)
{
    // Subscribers do not listen, so nothing makes Fast DDS pick different participant ids for them;
    // equal ids give equal TCP logical ports and the publisher would match only one subscriber.
    qos.wire_protocol().participant_id =
            side == Side::publisher ? 0 : static_cast<int32_t>(subscriber_index) + 1;
    auto tcp = std::make_shared<compat::transport::TCPv4TransportDescriptor>();
    tcp->interfaceWhiteList.emplace_back(kLoopback);
    tcp->enable_tcp_nodelay = options.tcp_nodelay;
    if (side == Side::publisher)
    {
        tcp->add_listener_port(options.tcp_port);
    }
    else
    {
        qos.wire_protocol().builtin.initialPeersList.push_back(compat::tcpv4_loopback(options.tcp_port));
    }
    qos.transport().user_transports.push_back(tcp);
    qos.wire_protocol().builtin.metatrafficMulticastLocatorList.clear();
}

dds::DomainParticipantQos participant_qos(const LatencyOptions& options, Side side, uint32_t subscriber_index,
        const std::string& name)
{
    // Without --xml the QoS is built from scratch, so no default profile (environment variable or
    // a DEFAULT_FASTRTPS_PROFILES.xml in the working directory) changes what is measured.
    dds::DomainParticipantQos qos = options.xml_file.empty()
            ? dds::DomainParticipantQos()
            : dds::DomainParticipantFactory::get_instance()->get_default_participant_qos();
    qos.name(name);
    compat::use_simple_discovery(qos);
    qos.wire_protocol().builtin.avoid_builtin_multicast = true;
    qos.wire_protocol().builtin.initialPeersList.clear();
    qos.wire_protocol().default_multicast_locator_list.clear();
    qos.transport().use_builtin_transports = false;
    qos.transport().user_transports.clear();
    switch (options.transport)
    {
        case Transport::intraprocess:
        case Transport::udpv4:
            use_udp_loopback(options, qos);
            break;
        case Transport::tcpv4:
            use_tcp_loopback(options, side, subscriber_index, qos);
            break;
        case Transport::shm:
            // Shared memory only: discovery and data both go through SHM segments, no socket at all.
            qos.wire_protocol().builtin.metatrafficMulticastLocatorList.clear();
            qos.wire_protocol().builtin.metatrafficUnicastLocatorList.clear();
            qos.wire_protocol().default_unicast_locator_list.clear();
            break;
    }
    if (options.shm)
    {
        qos.transport().user_transports.push_back(std::make_shared<compat::transport::SharedMemTransportDescriptor>());
    }
    if (options.secure())
    {
        add_security(options, name, qos);
    }
    return qos;
}

template<typename EndpointQos>
void apply_endpoint_policies(const LatencyOptions& options, uint32_t history_depth, EndpointQos& qos)
{
    qos.reliability().kind = options.reliability == Reliability::reliable ? dds::RELIABLE_RELIABILITY_QOS
                                                                           : dds::BEST_EFFORT_RELIABILITY_QOS;
    qos.durability().kind = dds::VOLATILE_DURABILITY_QOS;
    qos.history().kind = dds::KEEP_LAST_HISTORY_QOS;
    qos.history().depth = static_cast<int32_t>(history_depth);
    if (options.data_sharing)
    {
        qos.data_sharing().automatic();
    }
    else
    {
        qos.data_sharing().off();
    }
}

// Throughput: the burst topic (ping) keeps a whole burst, so that a burst written at once is not
// overwritten before it is sent (best effort) or acknowledged (reliable: all kept, and a full history
// makes write() wait for acknowledgements, which is the flow control a reliable burst meets).
template<typename EndpointQos>
void apply_burst_policies(const LatencyOptions& options, EndpointQos& qos)
{
    const auto depth = static_cast<int32_t>(largest_burst(options));
    if (options.reliability == Reliability::reliable)
    {
        qos.history().kind = dds::KEEP_ALL_HISTORY_QOS;
    }
    qos.history().depth = depth;
    qos.resource_limits().max_instances = 1;
    qos.resource_limits().max_samples = depth;
    qos.resource_limits().max_samples_per_instance = depth;
    qos.resource_limits().allocated_samples = std::min(depth, 100);
}

std::string policy_name(dds::QosPolicyId_t id)
{
    switch (id)
    {
        case dds::DURABILITY_QOS_POLICY_ID: return "DURABILITY";
        case dds::DEADLINE_QOS_POLICY_ID: return "DEADLINE";
        case dds::LATENCYBUDGET_QOS_POLICY_ID: return "LATENCY_BUDGET";
        case dds::OWNERSHIP_QOS_POLICY_ID: return "OWNERSHIP";
        case dds::LIVELINESS_QOS_POLICY_ID: return "LIVELINESS";
        case dds::RELIABILITY_QOS_POLICY_ID: return "RELIABILITY";
        case dds::DESTINATIONORDER_QOS_POLICY_ID: return "DESTINATION_ORDER";
        case dds::PRESENTATION_QOS_POLICY_ID: return "PRESENTATION";
        case dds::DATAREPRESENTATION_QOS_POLICY_ID: return "DATA_REPRESENTATION";
        default: return "QoS policy id " + std::to_string(id);
    }
}

}  // namespace

void MatchMonitor::writer_matched(int current_count, int count_change)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        matched_writers_ = current_count;
        if (count_change < 0 && failure_.empty())
        {
            failure_ = "peer lost: a reader of our writer went away";
        }
    }
    changed_.notify_all();
}

void MatchMonitor::reader_matched(int current_count, int count_change)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        matched_readers_ = current_count;
        if (count_change < 0 && failure_.empty())
        {
            failure_ = "peer lost: a writer of our reader went away";
        }
    }
    changed_.notify_all();
}

void MatchMonitor::incompatible_qos(const std::string& description)
{
    failed(description);
}

void MatchMonitor::failed(const std::string& description)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure_.empty())
        {
            failure_ = description;
        }
    }
    changed_.notify_all();
}

void MatchMonitor::interrupt()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        interrupted_ = true;
        if (failure_.empty())
        {
            failure_ = kInterruptedBySignal;
        }
    }
    changed_.notify_all();
}

bool MatchMonitor::wait_for_matches(int count, std::chrono::steady_clock::time_point deadline)
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [&]() {
        return (matched_writers_ >= count && matched_readers_ >= count) || !failure_.empty();
    });
    return matched_writers_ >= count && matched_readers_ >= count && failure_.empty();
}

int MatchMonitor::matched_writers() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return matched_writers_;
}

int MatchMonitor::matched_readers() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return matched_readers_;
}

std::string MatchMonitor::failure() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
}

WriterListener::WriterListener(MatchMonitor& monitor)
    : monitor_(monitor)
{
}

void WriterListener::on_publication_matched(dds::DataWriter*, const dds::PublicationMatchedStatus& status)
{
    monitor_.writer_matched(status.current_count, status.current_count_change);
}

void WriterListener::on_offered_incompatible_qos(dds::DataWriter* writer, const dds::OfferedIncompatibleQosStatus& status)
{
    monitor_.incompatible_qos("incompatible QoS: writer on topic " + writer->get_topic()->get_name() +
            " offers less than a remote reader requests (" + policy_name(status.last_policy_id) + ")");
}

ReaderListenerBase::ReaderListenerBase(MatchMonitor& monitor)
    : monitor_(monitor)
{
}

void ReaderListenerBase::on_subscription_matched(dds::DataReader*, const dds::SubscriptionMatchedStatus& status)
{
    monitor_.reader_matched(status.current_count, status.current_count_change);
}

void ReaderListenerBase::on_requested_incompatible_qos(dds::DataReader* reader,
        const dds::RequestedIncompatibleQosStatus& status)
{
    monitor_.incompatible_qos("incompatible QoS: reader on topic " + reader->get_topicdescription()->get_name() +
            " requests more than a remote writer offers (" + policy_name(status.last_policy_id) + ")");
}

Endpoints::Endpoints(const LatencyOptions& options, Side side, uint32_t subscriber_index,
        const std::string& participant_name,
        dds::DataWriterListener& writer_listener, dds::DataReaderListener& reader_listener,
        const std::function<void(dds::DataWriter&)>& writer_created)
{
    auto* factory = dds::DomainParticipantFactory::get_instance();
    const std::string where = std::string(to_string(options.transport)) + " " +
            (side == Side::publisher ? "publisher" : "subscriber");
    participant_ = factory->create_participant(options.domain, participant_qos(options, side, subscriber_index, participant_name));
    if (participant_ == nullptr)
    {
        throw RunError("Fast DDS could not create the " + where + " participant" +
                (options.transport == Transport::tcpv4 && side == Side::publisher
                        ? " (is TCP port " + std::to_string(options.tcp_port) + " free?)"
                        : std::string()));
    }
    try
    {
        dds::TypeSupport type(options.loans ? static_cast<dds::TopicDataType*>(new PlainSampleType(plain_capacity(options)))
                                            : new LatencySampleType());
        if (!compat::succeeded(type.register_type(participant_)))
        {
            throw RunError("Fast DDS could not register the sample type on the " + where + " participant");
        }
        const std::string type_name = type.get_type_name();
        dds::Topic* ping = participant_->create_topic(kPingTopic, type_name, dds::TopicQos());
        dds::Topic* pong = participant_->create_topic(kPongTopic, type_name, dds::TopicQos());
        dds::Publisher* publisher = participant_->create_publisher(dds::PublisherQos());
        dds::Subscriber* subscriber = participant_->create_subscriber(dds::SubscriberQos());
        if (ping == nullptr || pong == nullptr || publisher == nullptr || subscriber == nullptr)
        {
            throw RunError("Fast DDS could not create the topics of the " + where);
        }
        dds::DataWriterQos writer_qos = options.xml_file.empty() ? dds::DataWriterQos()
                                                                 : publisher->get_default_datawriter_qos();
        dds::DataReaderQos reader_qos = options.xml_file.empty() ? dds::DataReaderQos()
                                                                 : subscriber->get_default_datareader_qos();
        // One sample in flight per direction; readers keep a few so that handshake answers from
        // several subscribers arriving together are not overwritten before they are taken.
        apply_endpoint_policies(options, 1, writer_qos);
        apply_endpoint_policies(options, options.subscribers + 4, reader_qos);
        if (options.experiment == Experiment::throughput)
        {
            if (side == Side::publisher)
            {
                apply_burst_policies(options, writer_qos);
                // A burst fills the history at once, and only acknowledgements free it: heartbeats
                // every 100 ms (not 3 s) and NACKs answered at once, as Fast DDS' ThroughputTest sets them.
                compat::set_reliable_writer_times(writer_qos, compat::Duration(0, 100000000), compat::Duration(0, 0),
                        compat::Duration(0, 0));
            }
            else
            {
                apply_burst_policies(options, reader_qos);
            }
        }
        dds::Topic* written = side == Side::publisher ? ping : pong;
        dds::Topic* read = side == Side::publisher ? pong : ping;
        writer_ = publisher->create_datawriter(written, writer_qos, &writer_listener);
        if (writer_ == nullptr)
        {
            throw RunError("Fast DDS could not create the " + where + " writer");
        }
        writer_created(*writer_);
        reader_ = subscriber->create_datareader(read, reader_qos, &reader_listener);
        if (reader_ == nullptr)
        {
            throw RunError("Fast DDS could not create the " + where + " reader");
        }
    }
    catch (...)
    {
        participant_->delete_contained_entities();
        factory->delete_participant(participant_);
        throw;
    }
}

Endpoints::~Endpoints()
{
    participant_->delete_contained_entities();
    dds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
}

std::string participant_name(const LatencyOptions& options, Side side, uint32_t subscriber_index)
{
    if (options.secure())
    {
        return options.security_name;
    }
    return side == Side::publisher ? "perfgate_publisher" : "perfgate_subscriber_" + std::to_string(subscriber_index);
}

void configure_fastdds_library(const LatencyOptions& options)
{
    auto* factory = dds::DomainParticipantFactory::get_instance();
    // Load whatever default profiles Fast DDS insists on now, so that nothing loaded lazily later
    // overrides the library settings below.
    factory->load_profiles();
    if (!options.xml_file.empty())
    {
        std::ifstream readable(options.xml_file);
        if (!readable || !compat::succeeded(factory->load_XML_profiles_file(options.xml_file)))
        {
            throw UsageError("--xml " + options.xml_file + ": cannot load the XML profiles file");
        }
    }
    if (!compat::set_intraprocess_delivery(options.transport == Transport::intraprocess))
    {
        throw RunError("Fast DDS refused the intra-process library setting");
    }
}

void check_security_files(const LatencyOptions& options, const std::string& name)
{
    for (const std::string& file : security_files(options, name))
    {
        if (!std::ifstream(file))
        {
            throw UsageError("--security-dir " + options.security_dir + ": missing " + file +
                    " (generate it with perfgate.security)");
        }
    }
}

}  // namespace perfgate
