#include "measurements.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace perfgate {
namespace {

std::string json_escape(const std::string& text)
{
    std::string escaped;
    for (char c : text)
    {
        switch (c)
        {
            case '"': escaped += "\\\""; break;
            case '\\': escaped += "\\\\"; break;
            case '\n': escaped += "\\n"; break;
            case '\t': escaped += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20)
                {
                    char code[8];
                    std::snprintf(code, sizeof(code), "\\u%04x", static_cast<unsigned>(c));
                    escaped += code;
                }
                else
                {
                    escaped += c;
                }
        }
    }
    return escaped;
}

}  // namespace

double percentile(const std::vector<double>& sorted, double quantile)
{
    if (sorted.empty())
    {
        return 0;
    }
    const double position = quantile * static_cast<double>(sorted.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    const double fraction = position - static_cast<double>(below);
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

LatencyStatistics compute_statistics(const std::vector<double>& latencies_us)
{
    LatencyStatistics statistics;
    statistics.samples = latencies_us.size();
    if (latencies_us.empty())
    {
        return statistics;
    }
    std::vector<double> sorted = latencies_us;
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double value : sorted)
    {
        sum += value;
    }
    const auto n = static_cast<double>(sorted.size());
    statistics.mean = sum / n;
    double squares = 0;
    for (double value : sorted)
    {
        squares += (value - statistics.mean) * (value - statistics.mean);
    }
    statistics.stdev = std::sqrt(squares / n);
    statistics.min = sorted.front();
    statistics.max = sorted.back();
    statistics.median = percentile(sorted, 0.5);
    statistics.p90 = percentile(sorted, 0.9);
    statistics.p99 = percentile(sorted, 0.99);
    statistics.p9999 = percentile(sorted, 0.9999);
    return statistics;
}

std::string format_latency(double value)
{
    char text[64];
    std::snprintf(text, sizeof(text), "%.3f", value);
    std::string formatted = text;
    if (formatted == "-0.000")
    {
        formatted = "0.000";
    }
    return formatted;
}

std::string format_measurements_csv(const std::vector<PayloadResult>& results)
{
    std::string csv = "Sample,Payload [Bytes],Latency [us]\n";
    uint64_t sample = 0;
    for (const PayloadResult& result : results)
    {
        const std::string payload = std::to_string(result.payload);
        for (double latency : result.latencies_us)
        {
            csv += std::to_string(++sample) + "," + payload + "," + format_latency(latency) + "\n";
        }
    }
    return csv;
}

std::string format_table(const std::vector<PayloadResult>& results)
{
    std::string table;
    char line[256];
    std::snprintf(line, sizeof(line), "%8s %9s %6s %10s %10s %10s %10s %10s %10s %10s %10s\n", "Bytes", "Samples",
            "Lost", "stdev", "mean", "min", "50%", "90%", "99%", "99.99%", "max");
    table += line;
    std::snprintf(line, sizeof(line), "%8s %9s %6s %10s %10s %10s %10s %10s %10s %10s %10s\n", "--------",
            "---------", "------", "----------", "----------", "----------", "----------", "----------",
            "----------", "----------", "----------");
    table += line;
    for (const PayloadResult& result : results)
    {
        const LatencyStatistics s = compute_statistics(result.latencies_us);
        std::snprintf(line, sizeof(line), "%8u %9zu %6u %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n",
                result.payload, s.samples, result.lost, s.stdev, s.mean, s.min, s.median, s.p90, s.p99, s.p9999,
                s.max);
        table += line;
    }
    table += "(round-trip latency in microseconds)\n";
    return table;
}

std::string format_report_json(const RunReport& report, const std::vector<PayloadResult>& results)
{
    std::string json = "{\n";
    json += "  \"fastdds_version\": \"" + json_escape(report.fastdds_version) + "\",\n";
    json += "  \"warmup\": " + std::to_string(report.warmup) + ",\n";
    json += "  \"payloads\": {";
    for (std::size_t i = 0; i < results.size(); ++i)
    {
        json += (i == 0 ? "\n" : ",\n");
        json += "    \"" + std::to_string(results[i].payload) + "\": {\"samples\": " +
                std::to_string(results[i].latencies_us.size()) + ", \"lost\": " + std::to_string(results[i].lost) +
                "}";
    }
    json += results.empty() ? "},\n" : "\n  },\n";
    json += std::string("  \"matched\": ") + (report.matched ? "true" : "false") + ",\n";
    json += std::string("  \"complete\": ") + (report.complete ? "true" : "false") + ",\n";
    json += std::string("  \"loans\": ") + (report.loans ? "true" : "false") + ",\n";
    json += "  \"error\": " + (report.error.empty() ? std::string("null") : "\"" + json_escape(report.error) + "\"") +
            "\n";
    json += "}\n";
    return json;
}

void write_file_atomically(const std::string& path, const std::string& content)
{
    const std::string temporary = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
        file << content;
        file.flush();
        if (!file)
        {
            std::remove(temporary.c_str());
            throw std::runtime_error(path + ": cannot write file");
        }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
    {
        std::remove(temporary.c_str());
        throw std::runtime_error(path + ": cannot write file");
    }
}

bool can_create_file(const std::string& path)
{
    const auto slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    return ::access(folder.c_str(), W_OK | X_OK) == 0;
}

}  // namespace perfgate
