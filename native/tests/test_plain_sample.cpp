// The zero-copy sample: LatencySample <-> plain memory, and its TopicDataType's fixed encoding.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "plain_sample.hpp"

namespace perfgate {
namespace {

TEST(PlainSample, CarriesEveryFieldAndTheDataThrough)
{
    LatencySample sample;
    sample.seq = 7;
    sample.kind = SampleKind::handshake;
    sample.timestamp_ns = -123456789012345;
    sample.origin = 3;
    sample.data = {1, 2, 3, 250};
    std::vector<uint8_t> memory(sizeof(PlainHeader) + 16, 0xee);
    ASSERT_TRUE(to_plain(sample, memory.data(), 16));
    LatencySample back;
    back.data = {9, 9, 9, 9, 9, 9, 9, 9};  // replaced, not appended to
    ASSERT_TRUE(from_plain(memory.data(), 16, back));
    EXPECT_EQ(back.seq, 7u);
    EXPECT_EQ(back.kind, SampleKind::handshake);
    EXPECT_EQ(back.timestamp_ns, -123456789012345);
    EXPECT_EQ(back.origin, 3u);
    EXPECT_EQ(back.data, sample.data);
}

TEST(PlainSample, RefusesWhatDoesNotFit)
{
    LatencySample sample;
    sample.data.assign(17, 1);
    std::vector<uint8_t> memory(sizeof(PlainHeader) + 17, 0);
    EXPECT_FALSE(to_plain(sample, memory.data(), 16));
    ASSERT_TRUE(to_plain(sample, memory.data(), 17));
    LatencySample back;
    EXPECT_FALSE(from_plain(memory.data(), 16, back));  // a size above the capacity: corrupt
    reinterpret_cast<PlainHeader*>(memory.data())->kind = 99;
    EXPECT_FALSE(from_plain(memory.data(), 17, back));
}

TEST(PlainSample, TheTypeIsPlainBoundedAndOfOneSize)
{
    PlainSampleType type(1024);
    EXPECT_TRUE(type.is_bounded());
    void* sample = compat::create_sample(type);
    LatencySample latency;
    latency.seq = 42;
    latency.data.assign(100, 0x5a);
    ASSERT_TRUE(to_plain(latency, sample, 1024));
    const uint32_t size = compat::serialized_size(type, sample);
    EXPECT_EQ(size, 4 + sizeof(PlainHeader) + 1024);
    compat::SerializedPayload payload(size);
    ASSERT_TRUE(compat::serialize_sample(type, sample, payload));
    EXPECT_EQ(payload.length, size);
    void* copy = compat::create_sample(type);
    ASSERT_TRUE(compat::deserialize_sample(type, payload, copy));
    LatencySample back;
    ASSERT_TRUE(from_plain(copy, 1024, back));
    EXPECT_EQ(back.seq, 42u);
    EXPECT_EQ(back.data, latency.data);
    compat::delete_sample(type, sample);
    compat::delete_sample(type, copy);
}

TEST(PlainSample, CapacityIsTheLargestPayload)
{
    LatencyOptions options;
    options.payloads = {64, 16384, 16};
    EXPECT_EQ(plain_capacity(options), 16384u);
    options.loans = true;
    EXPECT_EQ(sample_io(options).capacity, 16384u);
    options.loans = false;
    EXPECT_EQ(sample_io(options).capacity, 0u);
}

}  // namespace
}  // namespace perfgate
