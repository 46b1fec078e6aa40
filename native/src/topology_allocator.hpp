// The process's own allocator statistics (glibc's mallinfo2: arena, in use, mmap), sampled every
// period by a thread of their own into a CSV file, as the benchmark's resources table has them
// beside /proc's rss and vsz (which perfgate reads from outside).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace perfgate {

class AllocatorSampler
{
public:
    // Samples at once and then every period until stopped; nothing when path is empty.
    AllocatorSampler(const std::string& path, std::chrono::milliseconds period);
    ~AllocatorSampler();
    AllocatorSampler(const AllocatorSampler&) = delete;
    AllocatorSampler& operator=(const AllocatorSampler&) = delete;

    // Stops the thread and writes the file (time_ns,arena_kb,in_use_kb,mmap_kb); false when it cannot.
    bool finish();

private:
    struct Reading
    {
        int64_t time_ns;
        uint64_t arena_kb;
        uint64_t in_use_kb;
        uint64_t mmap_kb;
    };

    void sample();

    std::string path_;
    std::chrono::milliseconds period_;
    std::vector<Reading> readings_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace perfgate
