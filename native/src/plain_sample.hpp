// The zero-copy sample: a fixed-size, pointer-free copy of a LatencySample that Fast DDS can loan
// from its data-sharing pool and hand to a reader in place (shared memory, data sharing, loans:
// Fast DDS' fastest path). The roles keep working on LatencySample; write_sample_to and
// take_sample_from copy between the two where the options ask for loans, as an application fills
// a loaned sample and reads one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fastdds_compat.hpp"
#include "latency_sample.hpp"
#include "options.hpp"

namespace perfgate {

// In shared memory as written; the data follows it (capacity bytes).
struct PlainHeader
{
    uint32_t seq = 0;
    uint32_t kind = 0;
    int64_t timestamp_ns = 0;
    uint32_t origin = 0;
    uint32_t size = 0;  // bytes of data used
};

// The largest payload of the options: every plain sample has room for it.
uint32_t plain_capacity(const LatencyOptions& options);

// How the roles write and take samples: as LatencySamples, or through loans of plain samples.
struct SampleIO
{
    bool loans = false;
    uint32_t capacity = 0;
};

SampleIO sample_io(const LatencyOptions& options);

// false when the sample's data is larger than capacity.
bool to_plain(const LatencySample& sample, void* memory, uint32_t capacity);
// false when the header's size is above capacity (a corrupt sample).
bool from_plain(const void* memory, uint32_t capacity, LatencySample& sample);

class PlainSampleType : public compat::TopicDataTypeAdapter
{
public:
    explicit PlainSampleType(uint32_t capacity);

protected:
    uint32_t encode(const void* sample, uint8_t* buffer, uint32_t capacity) const override;
    bool decode(const uint8_t* buffer, uint32_t length, void* sample) const override;
    uint32_t encoded_size(const void* sample) const override;
    void* new_sample() const override;
    void free_sample(void* sample) const override;
    bool plain() const override { return true; }

private:
    uint32_t capacity_;
};

// Writes `sample`: as it is, or, with loans, into a sample loaned from the writer (RunError when
// Fast DDS refuses the loan: the zero-copy path was asked for and is not there).
bool write_sample_to(compat::dds::DataWriter& writer, const LatencySample& sample, const SampleIO& io);
// Takes the next sample into `sample`: as it is, or, with loans, from a loaned one returned at once.
bool take_sample_from(compat::dds::DataReader& reader, LatencySample& sample, compat::dds::SampleInfo& info,
        const SampleIO& io);

}  // namespace perfgate
