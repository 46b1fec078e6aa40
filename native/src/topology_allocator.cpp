#include "topology_allocator.hpp"

#include <malloc.h>

#include <cstdio>

namespace perfgate {

AllocatorSampler::AllocatorSampler(const std::string& path, std::chrono::milliseconds period)
    : path_(path)
    , period_(period)
{
    if (path_.empty())
    {
        return;
    }
    thread_ = std::thread([this]() {
        std::unique_lock<std::mutex> lock(mutex_);
        auto next = std::chrono::steady_clock::now();
        while (!stop_)
        {
            lock.unlock();
            sample();
            lock.lock();
            next += period_;
            wake_.wait_until(lock, next, [this]() { return stop_; });
        }
    });
}

AllocatorSampler::~AllocatorSampler()
{
    finish();
}

void AllocatorSampler::sample()
{
    const struct mallinfo2 info = ::mallinfo2();
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    readings_.push_back(Reading{std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), info.arena / 1024,
            info.uordblks / 1024, info.hblkhd / 1024});
}

bool AllocatorSampler::finish()
{
    if (!thread_.joinable())
    {
        return true;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
    std::FILE* file = std::fopen(path_.c_str(), "w");
    if (file == nullptr)
    {
        return false;
    }
    std::fputs("time_ns,arena_kb,in_use_kb,mmap_kb\n", file);
    for (const Reading& reading : readings_)
    {
        std::fprintf(file, "%lld,%llu,%llu,%llu\n", static_cast<long long>(reading.time_ns),
                static_cast<unsigned long long>(reading.arena_kb), static_cast<unsigned long long>(reading.in_use_kb),
                static_cast<unsigned long long>(reading.mmap_kb));
    }
    return std::fclose(file) == 0;
}

}  // namespace perfgate
