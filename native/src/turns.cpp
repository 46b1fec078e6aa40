#include "turns.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "endpoints.hpp"
#include "stop_request.hpp"

namespace perfgate {

namespace {

// How often a waiting side looks at the stop request.
constexpr int kStopCheckPeriodMs = 100;

}  // namespace

TurnTaking::TurnTaking(int socket)
    : socket_(socket)
{
}

TurnTaking::~TurnTaking()
{
    if (socket_ >= 0)
    {
        ::close(socket_);
    }
}

void TurnTaking::wait(const std::function<bool()>& interrupted)
{
    if (!enabled())
    {
        return;
    }
    while (true)
    {
        if (interrupted())
        {
            throw RunError(kInterruptedBySignal);
        }
        pollfd ready{socket_, POLLIN, 0};
        const int polled = ::poll(&ready, 1, kStopCheckPeriodMs);
        if (polled < 0 && errno != EINTR)
        {
            throw RunError(std::string("waiting for the turn: ") + std::strerror(errno));
        }
        if (polled <= 0)
        {
            continue;
        }
        char token = 0;
        const ssize_t got = ::recv(socket_, &token, 1, 0);
        if (got == 1)
        {
            return;
        }
        // ECONNRESET: the partner exited with a turn of ours still unread on its side.
        if (got == 0 || errno == ECONNRESET)
        {
            throw RunError("the process taking turns with this one ended before passing the turn");
        }
        if (errno != EINTR && errno != EAGAIN)
        {
            throw RunError(std::string("waiting for the turn: ") + std::strerror(errno));
        }
    }
}

void TurnTaking::pass()
{
    if (!enabled())
    {
        return;
    }
    const char token = 't';
    ssize_t sent = 0;
    do
    {
        sent = ::send(socket_, &token, 1, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
}

}  // namespace perfgate
