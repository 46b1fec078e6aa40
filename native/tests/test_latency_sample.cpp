// The sample type: codec round trips, rejection of bad buffers, and the TopicDataType driven
// through the same virtual interface Fast DDS' writers and readers use.
#include <gtest/gtest.h>

#include <vector>

#include "fastdds_compat.hpp"
#include "latency_sample.hpp"
#include "latency_type.hpp"

namespace perfgate {
namespace {

LatencySample make_sample(uint32_t data_bytes)
{
    LatencySample sample;
    sample.seq = 0xA1B2C3D4u;
    sample.kind = SampleKind::handshake;
    sample.timestamp_ns = -1234567890123456789LL;
    sample.origin = 7;
    for (uint32_t i = 0; i < data_bytes; ++i)
    {
        sample.data.push_back(static_cast<uint8_t>(i * 31 + 5));
    }
    return sample;
}

void expect_equal(const LatencySample& a, const LatencySample& b)
{
    EXPECT_EQ(a.seq, b.seq);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.timestamp_ns, b.timestamp_ns);
    EXPECT_EQ(a.origin, b.origin);
    EXPECT_EQ(a.data, b.data);
}

TEST(LatencySampleCodec, RoundTripsEverySize)
{
    for (uint32_t bytes : {0u, 1u, 16u, 1024u, 16384u, kMaxDataBytes})
    {
        const LatencySample sample = make_sample(bytes);
        std::vector<uint8_t> buffer(kMaxEncodedBytes);
        const uint32_t written = encode(sample, buffer.data(), buffer.size());
        ASSERT_EQ(written, 4u + 32u + bytes) << bytes;
        LatencySample decoded;
        ASSERT_TRUE(decode(buffer.data(), written, decoded)) << bytes;
        expect_equal(sample, decoded);
    }
}

TEST(LatencySampleCodec, WritesLittleEndianCdr)
{
    LatencySample sample;
    sample.seq = 0x01020304;
    sample.kind = SampleKind::end;
    sample.data = {0xEE};
    std::vector<uint8_t> buffer(64);
    ASSERT_EQ(encode(sample, buffer.data(), buffer.size()), 37u);
    const std::vector<uint8_t> head(buffer.begin(), buffer.begin() + 12);
    EXPECT_EQ(head, (std::vector<uint8_t>{0x00, 0x01, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00}));
    EXPECT_EQ(std::vector<uint8_t>(buffer.begin() + 24, buffer.begin() + 32), std::vector<uint8_t>(8, 0));  // reserved
    EXPECT_EQ(buffer[32], 1u);  // sequence length
    EXPECT_EQ(buffer[36], 0xEE);
}

TEST(LatencySampleCodec, ReadsBigEndianCdr)
{
    const std::vector<uint8_t> big_endian{0x00, 0x00, 0x00, 0x00,  // CDR_BE
            0x00, 0x00, 0x00, 0x2A,                                // seq 42
            0x00, 0x00, 0x00, 0x00,                                // ping
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,        // timestamp 256
            0x00, 0x00, 0x00, 0x03,                                // origin 3
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // reserved
            0x00, 0x00, 0x00, 0x02, 0xAB, 0xCD};                   // data
    LatencySample sample;
    ASSERT_TRUE(decode(big_endian.data(), big_endian.size(), sample));
    EXPECT_EQ(sample.seq, 42u);
    EXPECT_EQ(sample.kind, SampleKind::ping);
    EXPECT_EQ(sample.timestamp_ns, 256);
    EXPECT_EQ(sample.origin, 3u);
    EXPECT_EQ(sample.data, (std::vector<uint8_t>{0xAB, 0xCD}));
}

TEST(LatencySampleCodec, RejectsBadBuffers)
{
    const LatencySample sample = make_sample(100);
    std::vector<uint8_t> buffer(kMaxEncodedBytes);
    const uint32_t written = encode(sample, buffer.data(), buffer.size());
    LatencySample decoded;
    EXPECT_FALSE(decode(buffer.data(), written - 1, decoded)) << "truncated data";
    EXPECT_FALSE(decode(buffer.data(), 35, decoded)) << "truncated header";
    std::vector<uint8_t> unknown_encapsulation = buffer;
    unknown_encapsulation[1] = 0x03;  // PL_CDR_LE
    EXPECT_FALSE(decode(unknown_encapsulation.data(), written, decoded));
    std::vector<uint8_t> unknown_kind = buffer;
    unknown_kind[8] = 9;
    EXPECT_FALSE(decode(unknown_kind.data(), written, decoded));
}

TEST(LatencySampleCodec, RefusesTooSmallBufferAndTooLongData)
{
    std::vector<uint8_t> buffer(kMaxEncodedBytes + 16);
    EXPECT_EQ(encode(make_sample(100), buffer.data(), 4 + 32 + 99), 0u);
    EXPECT_EQ(encode(make_sample(kMaxDataBytes + 1), buffer.data(), buffer.size()), 0u);
}

TEST(LatencySampleType, SerializesThroughTheFastDdsInterface)
{
    LatencySampleType type;
    compat::dds::TopicDataType& as_fastdds = type;
    void* created = compat::create_sample(as_fastdds);
    auto* sample = static_cast<LatencySample*>(created);
    *sample = make_sample(16384);
    const uint32_t size = compat::serialized_size(as_fastdds, created);
    EXPECT_EQ(size, 4u + 32u + 16384u);
    compat::SerializedPayload payload(size);
    ASSERT_TRUE(compat::serialize_sample(as_fastdds, created, payload));
    EXPECT_EQ(payload.length, size);
    LatencySample received;
    ASSERT_TRUE(compat::deserialize_sample(as_fastdds, payload, &received));
    expect_equal(*sample, received);
    compat::delete_sample(as_fastdds, created);
}

TEST(LatencySampleType, FailsOnAPayloadTooSmall)
{
    LatencySampleType type;
    LatencySample sample = make_sample(64);
    compat::SerializedPayload payload(32);
    EXPECT_FALSE(compat::serialize_sample(type, &sample, payload));
}

}  // namespace
}  // namespace perfgate
