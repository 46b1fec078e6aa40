// perfgate-floor: plain socket ping-pong over 127.0.0.1 (UDP, or TCP with TCP_NODELAY), timed
// exactly like perfgate-latency (full round trip, same CSV). What no middleware can beat on this
// machine: the floor under the Fast DDS figures.
//
// Message: [u32 seq][u32 kind][u32 payload length][payload], native byte order (loopback only).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "latency_sample.hpp"
#include "measurements.hpp"
#include "options.hpp"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitDone = 0;
constexpr int kExitUsage = 2;
constexpr int kExitIncomplete = 3;
constexpr uint32_t kPing = 0;
constexpr uint32_t kEnd = 1;
constexpr std::size_t kHeaderBytes = 12;
constexpr uint32_t kMaxConsecutiveLost = 20;
constexpr auto kConnectTimeout = std::chrono::seconds(10);
// UDP goodbye: the end message is sent up to this many times, each waiting this long for its echo.
constexpr int kGoodbyeAttempts = 5;
constexpr auto kGoodbyeReplyWait = std::chrono::milliseconds(200);

class FloorError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

std::string system_error(const std::string& what)
{
    return what + ": " + std::strerror(errno);
}

// Owns one socket descriptor.
class Socket
{
public:
    explicit Socket(int descriptor = -1)
        : descriptor_(descriptor)
    {
    }
    ~Socket()
    {
        if (descriptor_ >= 0)
        {
            ::close(descriptor_);
        }
    }
    Socket(Socket&& other) noexcept
        : descriptor_(other.descriptor_)
    {
        other.descriptor_ = -1;
    }
    Socket& operator=(Socket&& other) noexcept
    {
        std::swap(descriptor_, other.descriptor_);
        return *this;
    }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int get() const { return descriptor_; }

private:
    int descriptor_;
};

sockaddr_in loopback_address(uint16_t port)
{
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

Socket open_socket(FloorTransport transport)
{
    Socket socket(::socket(AF_INET, transport == FloorTransport::udp ? SOCK_DGRAM : SOCK_STREAM, 0));
    if (socket.get() < 0)
    {
        throw FloorError(system_error("socket"));
    }
    return socket;
}

void set_nodelay(const Socket& socket)
{
    const int on = 1;
    if (::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0)
    {
        throw FloorError(system_error("TCP_NODELAY"));
    }
}

// The server's socket, bound (and for TCP listening) on 127.0.0.1:port before anyone connects.
Socket bind_server(const FloorOptions& options)
{
    Socket socket = open_socket(options.transport);
    const int on = 1;
    ::setsockopt(socket.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    const sockaddr_in address = loopback_address(options.port);
    if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
    {
        throw FloorError(system_error("bind 127.0.0.1:" + std::to_string(options.port)));
    }
    if (options.transport == FloorTransport::tcp && ::listen(socket.get(), 1) != 0)
    {
        throw FloorError(system_error("listen"));
    }
    return socket;
}

// Waits until the socket is readable; false at the deadline.
bool wait_readable(const Socket& socket, Clock::time_point deadline)
{
    while (true)
    {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left < 0)
        {
            return false;
        }
        pollfd descriptor{socket.get(), POLLIN, 0};
        const int ready = ::poll(&descriptor, 1, static_cast<int>(left) + 1);
        if (ready > 0)
        {
            return true;
        }
        if (ready < 0 && errno != EINTR)
        {
            throw FloorError(system_error("poll"));
        }
    }
}

void send_all(const Socket& socket, const uint8_t* data, std::size_t length)
{
    while (length > 0)
    {
        const ssize_t sent = ::send(socket.get(), data, length, MSG_NOSIGNAL);
        if (sent < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            throw FloorError(system_error("send"));
        }
        data += sent;
        length -= static_cast<std::size_t>(sent);
    }
}

// TCP: reads exactly length bytes; false if the peer closed the connection first.
bool receive_all(const Socket& socket, uint8_t* data, std::size_t length)
{
    while (length > 0)
    {
        const ssize_t received = ::recv(socket.get(), data, length, 0);
        if (received == 0)
        {
            return false;
        }
        if (received < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            throw FloorError(system_error("recv"));
        }
        data += received;
        length -= static_cast<std::size_t>(received);
    }
    return true;
}

void put_header(std::vector<uint8_t>& message, uint32_t seq, uint32_t kind)
{
    const uint32_t length = static_cast<uint32_t>(message.size() - kHeaderBytes);
    std::memcpy(message.data(), &seq, 4);
    std::memcpy(message.data() + 4, &kind, 4);
    std::memcpy(message.data() + 8, &length, 4);
}

uint32_t header_field(const std::vector<uint8_t>& message, std::size_t offset)
{
    uint32_t value = 0;
    std::memcpy(&value, message.data() + offset, 4);
    return value;
}

// Echoes every message back until the end message (or the client closing the TCP connection).
void serve(const FloorOptions& options, const Socket& server)
{
    std::vector<uint8_t> message(kHeaderBytes + kMaxDataBytes);
    if (options.transport == FloorTransport::udp)
    {
        while (true)
        {
            sockaddr_in peer{};
            socklen_t peer_length = sizeof(peer);
            const ssize_t received = ::recvfrom(server.get(), message.data(), message.size(), 0,
                    reinterpret_cast<sockaddr*>(&peer), &peer_length);
            if (received < 0 && errno == EINTR)
            {
                continue;
            }
            if (received <= 0)
            {
                return;  // the socket was shut down
            }
            if (received < static_cast<ssize_t>(kHeaderBytes))
            {
                continue;
            }
            if (header_field(message, 4) == kEnd)
            {
                // Echoed like a ping: the acknowledgement the client waits for before it leaves.
                ::sendto(server.get(), message.data(), kHeaderBytes, 0, reinterpret_cast<const sockaddr*>(&peer),
                        peer_length);
                return;
            }
            ::sendto(server.get(), message.data(), static_cast<std::size_t>(received), 0,
                    reinterpret_cast<const sockaddr*>(&peer), peer_length);
        }
    }
    Socket connection(::accept(server.get(), nullptr, nullptr));
    if (connection.get() < 0)
    {
        throw FloorError(system_error("accept"));
    }
    set_nodelay(connection);
    while (receive_all(connection, message.data(), kHeaderBytes))
    {
        const uint32_t length = header_field(message, 8);
        if (header_field(message, 4) == kEnd || length > kMaxDataBytes)
        {
            return;
        }
        if (!receive_all(connection, message.data() + kHeaderBytes, length))
        {
            return;
        }
        send_all(connection, message.data(), kHeaderBytes + length);
    }
}

Socket connect_client(const FloorOptions& options)
{
    const sockaddr_in address = loopback_address(options.port);
    const auto deadline = Clock::now() + kConnectTimeout;
    while (true)
    {
        Socket socket = open_socket(options.transport);
        if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0)
        {
            if (options.transport == FloorTransport::tcp)
            {
                set_nodelay(socket);
            }
            return socket;
        }
        if (Clock::now() >= deadline)
        {
            throw FloorError(system_error("connect 127.0.0.1:" + std::to_string(options.port)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

class FloorClient
{
public:
    FloorClient(const FloorOptions& options, Socket socket)
        : options_(options)
        , socket_(std::move(socket))
        , reply_(kHeaderBytes + kMaxDataBytes)
    {
    }

    std::vector<PayloadResult>& measure_all()
    {
        for (uint32_t payload : options_.payloads)
        {
            results_.push_back(PayloadResult{payload, {}, 0});
            measure(results_.back());
        }
        return results_;
    }

    // Tells the server to leave. Called once every sample was measured, so nothing about the
    // server's departure can spoil the measurement any more.
    void say_goodbye()
    {
        std::vector<uint8_t> end(kHeaderBytes);
        const uint32_t seq = next_seq_++;
        put_header(end, seq, kEnd);
        if (options_.transport == FloorTransport::tcp)
        {
            send_all(socket_, end.data(), end.size());
            return;
        }
        // UDP may drop a datagram: the end message is sent again until the server's echo of it
        // arrives. The server leaves right after echoing, so a copy that reaches its closed port
        // is refused (ECONNREFUSED on this connected socket): that too means the goodbye arrived.
        for (int attempt = 0; attempt < kGoodbyeAttempts; ++attempt)
        {
            if (udp_goodbye_attempt(end, seq) != Goodbye::unanswered)
            {
                return;
            }
        }
        std::cerr << "perfgate-floor: warning: the server did not acknowledge the end message" << std::endl;
    }

    const std::vector<PayloadResult>& results() const { return results_; }

private:
    void measure(PayloadResult& result)
    {
        std::vector<uint8_t> ping(kHeaderBytes + result.payload, 0x5a);
        uint32_t consecutive_lost = 0;
        for (uint32_t i = 0; i < options_.warmup + options_.samples; ++i)
        {
            const bool recorded = i >= options_.warmup;
            const uint32_t seq = next_seq_++;
            put_header(ping, seq, kPing);
            const auto sent = Clock::now();
            send_all(socket_, ping.data(), ping.size());
            if (await_reply(seq, sent + std::chrono::milliseconds(options_.sample_timeout_ms)))
            {
                consecutive_lost = 0;
                if (recorded)
                {
                    result.latencies_us.push_back(
                            std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
                }
                continue;
            }
            if (options_.transport == FloorTransport::tcp)
            {
                throw FloorError("no reply within " + std::to_string(options_.sample_timeout_ms) +
                        " ms over TCP: server lost");
            }
            if (recorded)
            {
                ++result.lost;
                std::cerr << "perfgate-floor: lost sample seq " << seq << " payload " << result.payload << std::endl;
            }
            if (++consecutive_lost >= kMaxConsecutiveLost)
            {
                throw FloorError("server lost: no reply for " + std::to_string(kMaxConsecutiveLost) +
                        " consecutive samples");
            }
        }
    }

    enum class Goodbye { acknowledged, server_gone, unanswered };

    Goodbye udp_goodbye_attempt(const std::vector<uint8_t>& end, uint32_t seq)
    {
        while (::send(socket_.get(), end.data(), end.size(), MSG_NOSIGNAL) < 0)
        {
            if (errno == ECONNREFUSED)
            {
                return Goodbye::server_gone;
            }
            if (errno != EINTR)
            {
                throw FloorError(system_error("send"));
            }
        }
        const auto deadline = Clock::now() + kGoodbyeReplyWait;
        while (wait_readable(socket_, deadline))
        {
            const ssize_t received = ::recv(socket_.get(), reply_.data(), reply_.size(), 0);
            if (received < 0 && errno == ECONNREFUSED)
            {
                return Goodbye::server_gone;
            }
            if (received >= static_cast<ssize_t>(kHeaderBytes) && header_field(reply_, 0) == seq &&
                    header_field(reply_, 4) == kEnd)
            {
                return Goodbye::acknowledged;
            }
        }
        return Goodbye::unanswered;
    }

    // True when the reply of seq arrived before the deadline; replies to older pings are dropped.
    bool await_reply(uint32_t seq, Clock::time_point deadline)
    {
        while (wait_readable(socket_, deadline))
        {
            if (options_.transport == FloorTransport::tcp)
            {
                if (!receive_all(socket_, reply_.data(), kHeaderBytes) ||
                        !receive_all(socket_, reply_.data() + kHeaderBytes, header_field(reply_, 8)))
                {
                    throw FloorError("the server closed the TCP connection");
                }
            }
            else if (::recv(socket_.get(), reply_.data(), reply_.size(), 0) < static_cast<ssize_t>(kHeaderBytes))
            {
                continue;
            }
            if (header_field(reply_, 0) == seq)
            {
                return true;
            }
        }
        return false;
    }

    const FloorOptions& options_;
    Socket socket_;
    std::vector<uint8_t> reply_;
    std::vector<PayloadResult> results_;
    uint32_t next_seq_ = 1;
};

void write_outputs(const FloorOptions& options, const std::vector<PayloadResult>& results)
{
    if (!options.output_csv.empty())
    {
        write_file_atomically(options.output_csv, format_measurements_csv(results));
    }
    std::cout << format_table(results) << std::flush;
}

int run(const FloorOptions& options)
{
    if (!options.output_csv.empty() && !can_create_file(options.output_csv))
    {
        throw UsageError(options.output_csv + ": cannot create the file (missing or read-only folder)");
    }
    if (options.role == FloorRole::server)
    {
        const Socket server = bind_server(options);
        std::cout << "perfgate-floor: ready" << std::endl;
        serve(options, server);
        return kExitDone;
    }
    Socket server;
    std::thread server_thread;
    std::string server_failure;
    if (options.role == FloorRole::both)
    {
        server = bind_server(options);
        server_thread = std::thread([&]() {
            try
            {
                serve(options, server);
            }
            catch (const std::exception& error)
            {
                server_failure = error.what();
            }
        });
    }
    std::cout << "perfgate-floor: ready" << std::endl;
    std::vector<PayloadResult> results;
    std::string failure;
    try
    {
        FloorClient client(options, connect_client(options));
        try
        {
            client.measure_all();
            client.say_goodbye();
        }
        catch (const FloorError& error)
        {
            failure = error.what();
        }
        results = client.results();
    }  // the client's socket closes here: a TCP server sees the connection end
    catch (const FloorError& error)
    {
        failure = error.what();
    }
    if (server_thread.joinable())
    {
        if (!failure.empty())
        {
            ::shutdown(server.get(), SHUT_RDWR);  // wakes a server still waiting in accept or recvfrom
        }
        server_thread.join();
    }
    write_outputs(options, results);
    if (!failure.empty())
    {
        throw FloorError(failure);
    }
    if (!server_failure.empty())
    {
        throw FloorError("server: " + server_failure);
    }
    return kExitDone;
}

}  // namespace
}  // namespace perfgate

int main(int argc, char** argv)
{
    // Dies with the perfgate that started it, even one killed by SIGKILL (SIGTERM's default action
    // ends this process; it holds nothing to clean up). A parent already gone left us to init.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1)
    {
        return perfgate::kExitIncomplete;
    }
    perfgate::FloorOptions options;
    try
    {
        options = perfgate::parse_floor_options(std::vector<std::string>(argv + 1, argv + argc));
        if (options.show_help)
        {
            std::cout << perfgate::floor_usage();
            return perfgate::kExitDone;
        }
        return perfgate::run(options);
    }
    catch (const perfgate::UsageError& error)
    {
        std::cerr << "perfgate-floor: " << error.what() << std::endl;
        return perfgate::kExitUsage;
    }
    catch (const std::exception& error)
    {
        std::cerr << "perfgate-floor: " << error.what() << std::endl;
        return perfgate::kExitIncomplete;
    }
}
