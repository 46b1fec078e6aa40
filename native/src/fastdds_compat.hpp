// The one place where the harness touches Fast DDS API that differs between 2.x and 3.x.
//
// Every other source includes this header instead of spelling version-specific headers,
// namespaces or signatures. Fast DDS 2.x ships <fastrtps/config.h> (package `fastrtps`,
// namespace eprosima::fastrtps for RTPS types); Fast DDS 3.x ships <fastdds/config.hpp>
// (package `fastdds`, everything under eprosima::fastdds, .hpp headers, write() returning
// a ReturnCode_t, snake_case TopicDataType methods, library settings on the participant factory).
#pragma once

#include <cstdint>
#include <string>

#if __has_include(<fastdds/config.hpp>)
#include <fastdds/config.hpp>
#define PERFGATE_FASTDDS_3 1
#else
#include <fastrtps/config.h>
#define PERFGATE_FASTDDS_3 0
#endif

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/qos/DomainParticipantQos.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>

#if PERFGATE_FASTDDS_3
#include <fastdds/LibrarySettings.hpp>
#include <fastdds/dds/core/ReturnCode.hpp>
#include <fastdds/rtps/attributes/RTPSParticipantAttributes.hpp>
#include <fastdds/rtps/common/Locator.hpp>
#include <fastdds/rtps/common/SerializedPayload.hpp>
#include <fastdds/rtps/transport/TCPv4TransportDescriptor.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.hpp>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.hpp>
#include <fastdds/utils/IPLocator.hpp>
#else
#include <fastdds/rtps/attributes/RTPSParticipantAttributes.h>
#include <fastdds/rtps/common/Locator.h>
#include <fastdds/rtps/common/SerializedPayload.h>
#include <fastdds/rtps/transport/TCPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/attributes/LibrarySettingsAttributes.h>
#include <fastrtps/utils/IPLocator.h>
#include <fastrtps/xmlparser/XMLProfileManager.h>
#endif

namespace perfgate {
namespace compat {

namespace dds = eprosima::fastdds::dds;
namespace transport = eprosima::fastdds::rtps;  // the descriptors live here in both versions

#if PERFGATE_FASTDDS_3
namespace rtps = eprosima::fastdds::rtps;
using ReturnCode = dds::ReturnCode_t;
using Duration = dds::Duration_t;
inline constexpr const char* kLibraryVersion = FASTDDS_VERSION_STR;
inline bool succeeded(ReturnCode code) { return code == dds::RETCODE_OK; }
#else
namespace rtps = eprosima::fastrtps::rtps;
using ReturnCode = eprosima::fastrtps::types::ReturnCode_t;
using Duration = eprosima::fastrtps::Duration_t;
inline constexpr const char* kLibraryVersion = FASTRTPS_VERSION_STR;
inline bool succeeded(const ReturnCode& code) { return code == ReturnCode::RETCODE_OK; }
#endif

using Locator = rtps::Locator_t;
using LocatorList = rtps::LocatorList_t;
using SerializedPayload = rtps::SerializedPayload_t;

// write() is a bool in 2.x and a ReturnCode_t in 3.x.
inline bool write_sample(dds::DataWriter& writer, void* sample)
{
#if PERFGATE_FASTDDS_3
    return succeeded(writer.write(sample));
#else
    return writer.write(sample);
#endif
}

// A reliable writer's heartbeat period and NACK delays: renamed in 3.0 (heartbeatPeriod ->
// heartbeat_period, ...).
inline void set_reliable_writer_times(dds::DataWriterQos& qos, const Duration& heartbeat_period,
        const Duration& nack_response_delay, const Duration& nack_supression_duration)
{
    auto& times = qos.reliable_writer_qos().times;
#if PERFGATE_FASTDDS_3
    times.heartbeat_period = heartbeat_period;
    times.nack_response_delay = nack_response_delay;
    times.nack_supression_duration = nack_supression_duration;
#else
    times.heartbeatPeriod = heartbeat_period;
    times.nackResponseDelay = nack_response_delay;
    times.nackSupressionDuration = nack_supression_duration;
#endif
}

// Intra-process delivery is a process-wide library setting: on the XML profile manager in 2.x,
// on the participant factory in 3.x. Must be called before the first participant is enabled.
inline bool set_intraprocess_delivery(bool full)
{
#if PERFGATE_FASTDDS_3
    eprosima::fastdds::LibrarySettings settings;
    settings.intraprocess_delivery =
            full ? eprosima::fastdds::INTRAPROCESS_FULL : eprosima::fastdds::INTRAPROCESS_OFF;
    return succeeded(dds::DomainParticipantFactory::get_instance()->set_library_settings(settings));
#else
    eprosima::fastrtps::LibrarySettingsAttributes settings;
    settings.intraprocess_delivery =
            full ? eprosima::fastrtps::INTRAPROCESS_FULL : eprosima::fastrtps::INTRAPROCESS_OFF;
    eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings(settings);
    return true;
#endif
}

inline void use_simple_discovery(dds::DomainParticipantQos& qos)
{
#if PERFGATE_FASTDDS_3
    qos.wire_protocol().builtin.discovery_config.discoveryProtocol = rtps::DiscoveryProtocol::SIMPLE;
#else
    qos.wire_protocol().builtin.discovery_config.discoveryProtocol = rtps::DiscoveryProtocol_t::SIMPLE;
#endif
}

inline Locator loopback_locator(int32_t kind, uint16_t physical_port)
{
    Locator locator;
    locator.kind = kind;
    rtps::IPLocator::setIPv4(locator, "127.0.0.1");
    rtps::IPLocator::setPhysicalPort(locator, physical_port);
    return locator;
}

inline Locator udpv4_loopback(uint16_t port) { return loopback_locator(LOCATOR_KIND_UDPv4, port); }
inline Locator tcpv4_loopback(uint16_t port) { return loopback_locator(LOCATOR_KIND_TCPv4, port); }

// TopicDataType's virtual interface changed names and signatures in 3.x. A type derives from
// this adapter and implements the version-neutral hooks below; the adapter maps them onto
// whichever virtuals the installed Fast DDS declares.
class TopicDataTypeAdapter : public dds::TopicDataType
{
public:
    TopicDataTypeAdapter(const std::string& name, uint32_t max_serialized_size)
    {
#if PERFGATE_FASTDDS_3
        set_name(name);
        max_serialized_type_size = max_serialized_size;
        is_compute_key_provided = false;
#else
        setName(name.c_str());
        m_typeSize = max_serialized_size;
        m_isGetKeyDefined = false;
#endif
    }

protected:
    // Writes the encapsulated sample into buffer (capacity bytes); returns the bytes written, 0 on failure.
    virtual uint32_t encode(const void* sample, uint8_t* buffer, uint32_t capacity) const = 0;
    virtual bool decode(const uint8_t* buffer, uint32_t length, void* sample) const = 0;
    virtual uint32_t encoded_size(const void* sample) const = 0;
    virtual void* new_sample() const = 0;
    virtual void free_sample(void* sample) const = 0;
    // A fixed-size sample with no pointers inside: Fast DDS may loan it and share it in place (zero copy).
    virtual bool plain() const { return false; }

public:
#if PERFGATE_FASTDDS_3
    bool serialize(const void* const data, rtps::SerializedPayload_t& payload,
            dds::DataRepresentationId_t /*representation*/) override
    {
        return store(data, payload);
    }

    bool deserialize(rtps::SerializedPayload_t& payload, void* data) override
    {
        return decode(payload.data, payload.length, data);
    }

    uint32_t calculate_serialized_size(const void* const data, dds::DataRepresentationId_t) override
    {
        return encoded_size(data);
    }

    void* create_data() override { return new_sample(); }

    void delete_data(void* data) override { free_sample(data); }

    bool compute_key(rtps::SerializedPayload_t&, rtps::InstanceHandle_t&, bool) override { return false; }

    bool compute_key(const void* const, rtps::InstanceHandle_t&, bool) override { return false; }

    bool is_bounded() const override { return plain(); }

    bool is_plain(dds::DataRepresentationId_t) const override { return plain(); }
#else
    bool serialize(void* data, rtps::SerializedPayload_t* payload) override
    {
        return store(data, *payload);
    }

    bool deserialize(rtps::SerializedPayload_t* payload, void* data) override
    {
        return decode(payload->data, payload->length, data);
    }

    std::function<uint32_t()> getSerializedSizeProvider(void* data) override
    {
        return [this, data]() { return encoded_size(data); };
    }

    void* createData() override { return new_sample(); }

    void deleteData(void* data) override { free_sample(data); }

    bool getKey(void*, rtps::InstanceHandle_t*, bool) override { return false; }

    bool is_bounded() const override { return plain(); }

    bool is_plain() const override { return plain(); }
#if FASTRTPS_VERSION_MAJOR > 2 || (FASTRTPS_VERSION_MAJOR == 2 && FASTRTPS_VERSION_MINOR >= 12)
    // 2.12 (Fast CDR 2) added the per-representation overload, and its loan_sample and data sharing
    // ask only that one, whose default says "not plain": without it no sample is ever loaned.
    bool is_plain(dds::DataRepresentationId_t) const override { return plain(); }
#endif
#endif

private:
    bool store(const void* data, rtps::SerializedPayload_t& payload) const
    {
        const uint32_t written = encode(data, payload.data, payload.max_size);
        if (written == 0)
        {
            return false;
        }
        payload.length = written;
        // The encapsulation header written by encode() is little-endian CDR.
        payload.encapsulation = CDR_LE;
        return true;
    }
};

// Drives a TopicDataType the way a writer and a reader do (used by the unit tests).
inline bool serialize_sample(dds::TopicDataType& type, void* sample, SerializedPayload& payload)
{
#if PERFGATE_FASTDDS_3
    return type.serialize(sample, payload, dds::DEFAULT_DATA_REPRESENTATION);
#else
    return type.serialize(sample, &payload);
#endif
}

inline bool deserialize_sample(dds::TopicDataType& type, SerializedPayload& payload, void* sample)
{
#if PERFGATE_FASTDDS_3
    return type.deserialize(payload, sample);
#else
    return type.deserialize(&payload, sample);
#endif
}

inline uint32_t serialized_size(dds::TopicDataType& type, void* sample)
{
#if PERFGATE_FASTDDS_3
    return type.calculate_serialized_size(sample, dds::DEFAULT_DATA_REPRESENTATION);
#else
    return type.getSerializedSizeProvider(sample)();
#endif
}

inline void* create_sample(dds::TopicDataType& type)
{
#if PERFGATE_FASTDDS_3
    return type.create_data();
#else
    return type.createData();
#endif
}

inline void delete_sample(dds::TopicDataType& type, void* sample)
{
#if PERFGATE_FASTDDS_3
    type.delete_data(sample);
#else
    type.deleteData(sample);
#endif
}

}  // namespace compat
}  // namespace perfgate
