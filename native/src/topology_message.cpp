#include "topology_message.hpp"

#include <cstring>

namespace perfgate {
namespace {

// CDR encapsulation (little endian), then sequence (8), sent_ns (8), payload length (4), payload.
constexpr uint32_t kHeader = 4;
constexpr uint32_t kFixed = 8 + 8 + 4;
constexpr uint8_t kEncapsulation[kHeader] = {0x00, 0x01, 0x00, 0x00};

}  // namespace

TopologyMessageType::TopologyMessageType(uint32_t largest_payload)
    : compat::TopicDataTypeAdapter("perfgate::TopologyMessage", kHeader + kFixed + largest_payload)
{
}

uint32_t TopologyMessageType::encode(const void* sample, uint8_t* buffer, uint32_t capacity) const
{
    const auto& message = *static_cast<const TopologyMessage*>(sample);
    const auto length = static_cast<uint32_t>(message.payload.size());
    if (capacity < kHeader + kFixed + length)
    {
        return 0;
    }
    std::memcpy(buffer, kEncapsulation, kHeader);
    std::memcpy(buffer + kHeader, &message.sequence, 8);
    std::memcpy(buffer + kHeader + 8, &message.sent_ns, 8);
    std::memcpy(buffer + kHeader + 16, &length, 4);
    if (length > 0)
    {
        std::memcpy(buffer + kHeader + kFixed, message.payload.data(), length);
    }
    return kHeader + kFixed + length;
}

bool TopologyMessageType::decode(const uint8_t* buffer, uint32_t length, void* sample) const
{
    auto& message = *static_cast<TopologyMessage*>(sample);
    uint32_t payload_length = 0;
    if (length < kHeader + kFixed)
    {
        return false;
    }
    std::memcpy(&message.sequence, buffer + kHeader, 8);
    std::memcpy(&message.sent_ns, buffer + kHeader + 8, 8);
    std::memcpy(&payload_length, buffer + kHeader + 16, 4);
    if (payload_length > length - kHeader - kFixed)
    {
        return false;
    }
    // Copied out like any subscriber's message, though nothing reads the bytes.
    message.payload.resize(payload_length);
    if (payload_length > 0)
    {
        std::memcpy(message.payload.data(), buffer + kHeader + kFixed, payload_length);
    }
    return true;
}

uint32_t TopologyMessageType::encoded_size(const void* sample) const
{
    return kHeader + kFixed + static_cast<uint32_t>(static_cast<const TopologyMessage*>(sample)->payload.size());
}

void* TopologyMessageType::new_sample() const
{
    return new TopologyMessage();
}

void TopologyMessageType::free_sample(void* sample) const
{
    delete static_cast<TopologyMessage*>(sample);
}

}  // namespace perfgate
