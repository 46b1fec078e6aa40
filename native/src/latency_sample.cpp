#include "latency_sample.hpp"

#include <cstring>

namespace perfgate {
namespace {

// CDR encapsulation identifiers (RTPS 10.5): plain CDR, big- or little-endian.
constexpr uint8_t kCdrBigEndian = 0x00;
constexpr uint8_t kCdrLittleEndian = 0x01;

void put_u32(uint8_t* out, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
    {
        out[i] = static_cast<uint8_t>(value >> (8 * i));
    }
}

void put_u64(uint8_t* out, uint64_t value)
{
    for (int i = 0; i < 8; ++i)
    {
        out[i] = static_cast<uint8_t>(value >> (8 * i));
    }
}

uint64_t get_uint(const uint8_t* in, int bytes, bool little_endian)
{
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i)
    {
        const int shift = little_endian ? 8 * i : 8 * (bytes - 1 - i);
        value |= static_cast<uint64_t>(in[i]) << shift;
    }
    return value;
}

}  // namespace

uint32_t encoded_size(const LatencySample& sample)
{
    return kEncapsulationBytes + kFixedFieldBytes + static_cast<uint32_t>(sample.data.size());
}

uint32_t encode(const LatencySample& sample, uint8_t* buffer, std::size_t capacity)
{
    if (sample.data.size() > kMaxDataBytes)
    {
        return 0;
    }
    const uint32_t size = encoded_size(sample);
    if (capacity < size)
    {
        return 0;
    }
    buffer[0] = 0x00;
    buffer[1] = kCdrLittleEndian;
    buffer[2] = 0x00;  // options
    buffer[3] = 0x00;
    uint8_t* body = buffer + kEncapsulationBytes;
    put_u32(body + 0, sample.seq);
    put_u32(body + 4, static_cast<uint32_t>(sample.kind));
    put_u64(body + 8, static_cast<uint64_t>(sample.timestamp_ns));
    put_u32(body + 16, sample.origin);
    std::memset(body + 20, 0, kReservedBytes);
    put_u32(body + kDataLengthOffset, static_cast<uint32_t>(sample.data.size()));
    if (!sample.data.empty())
    {
        std::memcpy(body + kFixedFieldBytes, sample.data.data(), sample.data.size());
    }
    return size;
}

bool decode(const uint8_t* buffer, std::size_t length, LatencySample& sample)
{
    if (length < kEncapsulationBytes + kFixedFieldBytes || buffer[0] != 0x00)
    {
        return false;
    }
    if (buffer[1] != kCdrLittleEndian && buffer[1] != kCdrBigEndian)
    {
        return false;
    }
    const bool little = buffer[1] == kCdrLittleEndian;
    const uint8_t* body = buffer + kEncapsulationBytes;
    const auto kind = static_cast<uint32_t>(get_uint(body + 4, 4, little));
    const auto data_length = static_cast<uint32_t>(get_uint(body + kDataLengthOffset, 4, little));
    if (kind > static_cast<uint32_t>(SampleKind::report) || data_length > kMaxDataBytes ||
            length - kEncapsulationBytes - kFixedFieldBytes < data_length)
    {
        return false;
    }
    sample.seq = static_cast<uint32_t>(get_uint(body + 0, 4, little));
    sample.kind = static_cast<SampleKind>(kind);
    sample.timestamp_ns = static_cast<int64_t>(get_uint(body + 8, 8, little));
    sample.origin = static_cast<uint32_t>(get_uint(body + 16, 4, little));
    sample.data.assign(body + kFixedFieldBytes, body + kFixedFieldBytes + data_length);
    return true;
}

}  // namespace perfgate
