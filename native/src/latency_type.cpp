#include "latency_type.hpp"

namespace perfgate {

LatencySampleType::LatencySampleType()
    : compat::TopicDataTypeAdapter("perfgate::LatencySample", kMaxEncodedBytes)
{
}

uint32_t LatencySampleType::encode(const void* sample, uint8_t* buffer, uint32_t capacity) const
{
    return perfgate::encode(*static_cast<const LatencySample*>(sample), buffer, capacity);
}

bool LatencySampleType::decode(const uint8_t* buffer, uint32_t length, void* sample) const
{
    return perfgate::decode(buffer, length, *static_cast<LatencySample*>(sample));
}

uint32_t LatencySampleType::encoded_size(const void* sample) const
{
    return perfgate::encoded_size(*static_cast<const LatencySample*>(sample));
}

void* LatencySampleType::new_sample() const
{
    return new LatencySample();
}

void LatencySampleType::free_sample(void* sample) const
{
    delete static_cast<LatencySample*>(sample);
}

}  // namespace perfgate
