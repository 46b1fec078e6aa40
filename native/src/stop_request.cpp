#include "stop_request.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <system_error>

namespace perfgate {

StopRequest::StopRequest()
{
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    const int failed = pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    if (failed != 0)
    {
        throw std::system_error(failed, std::generic_category(), "pthread_sigmask");
    }
    watcher_ = std::thread([this]() { watch(); });
}

StopRequest::~StopRequest()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closing_ = true;
    }
    // Directed at the watcher, which has it blocked: its sigwait returns and it sees closing_.
    pthread_kill(watcher_.native_handle(), SIGTERM);
    watcher_.join();
}

bool StopRequest::requested() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return requested_;
}

StopRequest::Subscription StopRequest::subscribe(std::function<void()> on_stop)
{
    std::lock_guard<std::mutex> lock(mutex_);
    callbacks_.push_back(std::move(on_stop));
    if (requested_)
    {
        callbacks_.back()();
    }
    return Subscription(this, std::prev(callbacks_.end()));
}

void StopRequest::watch()
{
    while (true)
    {
        int received = 0;
        if (sigwait(&signals_, &received) != 0)
        {
            continue;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (closing_)
        {
            return;
        }
        if (requested_)
        {
            continue;  // a second signal: the first one is being acted on
        }
        requested_ = true;
        for (const auto& on_stop : callbacks_)
        {
            on_stop();
        }
    }
}

StopRequest::Subscription::Subscription(StopRequest* owner, std::list<std::function<void()>>::iterator entry)
    : owner_(owner)
    , entry_(entry)
{
}

StopRequest::Subscription::Subscription(Subscription&& other) noexcept
    : owner_(other.owner_)
    , entry_(other.entry_)
{
    other.owner_ = nullptr;
}

StopRequest::Subscription::~Subscription()
{
    if (owner_ != nullptr)
    {
        std::lock_guard<std::mutex> lock(owner_->mutex_);
        owner_->callbacks_.erase(entry_);
    }
}

void stop_when_parent_dies()
{
    // Before the parent-death signal, which may come at once. A disposition is the whole process's:
    // Fast DDS's threads are covered too.
    if (::signal(SIGPIPE, SIG_IGN) == SIG_ERR)
    {
        throw std::system_error(errno, std::generic_category(), "signal(SIGPIPE)");
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    {
        throw std::system_error(errno, std::generic_category(), "prctl(PR_SET_PDEATHSIG)");
    }
    // The parent may have died before the request was made: then this process was already handed
    // to init, and no signal would ever come.
    if (::getppid() == 1)
    {
        ::kill(::getpid(), SIGTERM);
    }
}

}  // namespace perfgate
