// The one sample type on the ping and pong topics, and its hand-written CDR codec.
//
// IDL equivalent:
//   struct LatencySample { uint32 seq; uint32 kind; int64 timestamp_ns; uint32 origin; uint32 reserved[2];
//                          sequence<octet> data; };
// Encoded as little-endian plain CDR (4-byte encapsulation header, then the fields at their
// natural alignment, which this field order meets without padding).
//
// `reserved` (zeros) puts the data 36 bytes into the serialized payload. Fast DDS' payload pools
// (TopicPayloadPool, read in 2.9.1) start a payload 12 bytes into a malloc'd block, so the data
// lands 16-byte aligned, as a std::vector's storage is: the copies between a sample and a payload
// then have source and destination alike modulo 16. With the data 28 bytes in they differed by 8,
// and the 16 KiB intra-process round trip was 2.5 % slower than Fast DDS' LatencyTest's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perfgate {

enum class SampleKind : uint32_t
{
    ping = 0,       // a measured or warm-up round trip; the echoing subscriber returns it unchanged
    handshake = 1,  // publisher -> every subscriber -> publisher: proves both directions matched
    end = 2,        // the publisher is done: subscribers leave
    // The throughput experiment, on the same topics:
    burst = 3,           // publisher -> subscribers: one sample of a burst; origin = the test's index,
                         // timestamp_ns = when the test started (steady clock, one machine)
    report_request = 4,  // publisher -> subscribers: seq = a test's index; answer with what you got
    report = 5,          // subscriber -> publisher: seq = the test's index, data = encode_report()
};

struct LatencySample
{
    uint32_t seq = 0;
    SampleKind kind = SampleKind::ping;
    int64_t timestamp_ns = 0;
    uint32_t origin = 0;  // the subscriber index on pongs
    std::vector<uint8_t> data;
};

// 64 KiB of data: all the contract's payloads (up to 16 KiB) and room for larger ones.
constexpr uint32_t kMaxDataBytes = 64 * 1024;
constexpr uint32_t kEncapsulationBytes = 4;
constexpr uint32_t kReservedBytes = 8;
constexpr uint32_t kDataLengthOffset = 4 + 4 + 8 + 4 + kReservedBytes;  // after seq, kind, timestamp, origin, reserved
constexpr uint32_t kFixedFieldBytes = kDataLengthOffset + 4;
constexpr uint32_t kMaxEncodedBytes = kEncapsulationBytes + kFixedFieldBytes + kMaxDataBytes;

uint32_t encoded_size(const LatencySample& sample);

// Returns the number of bytes written, or 0 when the buffer is too small or the data too long.
uint32_t encode(const LatencySample& sample, uint8_t* buffer, std::size_t capacity);

// False on a truncated buffer, an unknown encapsulation or kind, or data longer than kMaxDataBytes.
bool decode(const uint8_t* buffer, std::size_t length, LatencySample& sample);

}  // namespace perfgate
