#include "plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/rate.hpp"

namespace sluice::cli {
namespace {

using detail::i128;

constexpr int width = 1000;
constexpr int left = 150;
constexpr int right = 30;
constexpr int top = 70;
constexpr int lane_height = 80;
constexpr int lane_gap = 14;
constexpr int axis_height = 46;
constexpr const char* through_colour = "#1b7f3b";
constexpr const char* refused_colour = "#d1342f";
constexpr const char* busiest_colour = "#f2b705";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out;
}

/// A tick step of 1, 2 or 5 × 10^k nanoseconds giving about 8 ticks over `span`.
tick nice_step(i128 span) {
  i128 step = 1;
  for (;;) {
    for (int m : {1, 2, 5}) {
      if (span / (step * m) <= 8) return static_cast<tick>(std::min<i128>(step * m, detail::i64_max));
    }
    if (step > detail::i64_max / 10) return detail::i64_max;
    step *= 10;
  }
}

}  // namespace

void plot_recorder::add(tick t, const std::vector<bool>& admitted) {
  if (count_ == 0) first_ = t;
  last_ = t;
  ++count_;
  if (!binned_) {
    times_.push_back(t);
    if (admitted_.empty()) admitted_.resize(lanes_);
    for (std::size_t l = 0; l < lanes_; ++l) admitted_[l].push_back(admitted[l]);
    if (times_.size() > exact_limit) to_bins();
    return;
  }
  rebin(t);
  const auto bin = static_cast<std::size_t>((static_cast<i128>(t) - origin_) / width_);
  for (std::size_t l = 0; l < lanes_; ++l) ++(admitted[l] ? through_ : refused_)[l][bin];
}

void plot_recorder::to_bins() {
  binned_ = true;
  origin_ = first_;
  const i128 span = static_cast<i128>(last_) - first_ + 1;
  width_ = static_cast<tick>(std::max<i128>(1, (span + bin_count - 1) / bin_count));
  through_.assign(lanes_, std::vector<std::int64_t>(bin_count, 0));
  refused_.assign(lanes_, std::vector<std::int64_t>(bin_count, 0));
  for (std::size_t i = 0; i < times_.size(); ++i) {
    rebin(times_[i]);
    const auto bin = static_cast<std::size_t>((static_cast<i128>(times_[i]) - origin_) / width_);
    for (std::size_t l = 0; l < lanes_; ++l) ++(admitted_[l][i] ? through_ : refused_)[l][bin];
  }
  times_.clear();
  times_.shrink_to_fit();
  admitted_.clear();
}

void plot_recorder::rebin(tick t) {
  // Double the bin width (merging pairs) until t falls inside the bins.
  while (static_cast<i128>(t) - origin_ >= static_cast<i128>(width_) * static_cast<i128>(bin_count)) {
    for (std::size_t l = 0; l < lanes_; ++l) {
      for (std::size_t i = 0; i < bin_count / 2; ++i) {
        through_[l][i] = through_[l][2 * i] + through_[l][2 * i + 1];
        refused_[l][i] = refused_[l][2 * i] + refused_[l][2 * i + 1];
      }
      std::fill(through_[l].begin() + bin_count / 2, through_[l].end(), 0);
      std::fill(refused_[l].begin() + bin_count / 2, refused_[l].end(), 0);
    }
    width_ = width_ > detail::i64_max / 2 ? detail::i64_max : width_ * 2;
  }
}

std::string plot_recorder::render(const std::string& title, tick window, const std::vector<lane_info>& lanes) const {
  fmt::memory_buffer b;
  auto out = std::back_inserter(b);
  const int plot_w = width - left - right;
  const int height = top + static_cast<int>(lanes.size()) * (lane_height + lane_gap) + axis_height;
  // The time axis spans the trace and every busiest window.
  i128 t0 = first_;
  i128 t1 = std::max<i128>(static_cast<i128>(last_) + 1, t0 + 1);
  for (const auto& l : lanes)
    if (l.busiest > 0) t1 = std::max<i128>(t1, static_cast<i128>(l.busiest_start) + window);
  const i128 pad = std::max<i128>(1, (t1 - t0) / 60);  // keep marks off the frame
  t0 -= pad;
  t1 += pad;
  const auto px = [&](i128 t) {
    t = std::clamp(t, t0, t1);
    return left + static_cast<double>(t - t0) / static_cast<double>(t1 - t0) * plot_w;  // drawing only
  };

  fmt::format_to(out,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                 "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
                 width, height);
  fmt::format_to(out, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
  fmt::format_to(out, "<text x=\"{}\" y=\"26\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">{}</text>\n", left,
                 escape(title));
  // Legend.
  const int ly = 48;
  fmt::format_to(out,
                 "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
                 "font-size=\"13\" fill=\"#333\">through</text>\n",
                 left, ly - 10, through_colour, left + 18, ly);
  fmt::format_to(out,
                 "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
                 "font-size=\"13\" fill=\"#333\">refused</text>\n",
                 left + 90, ly - 10, refused_colour, left + 108, ly);
  fmt::format_to(out,
                 "<rect x=\"{}\" y=\"{}\" width=\"24\" height=\"12\" fill=\"{}\" fill-opacity=\"0.3\" stroke=\"{}\"/>"
                 "<text x=\"{}\" y=\"{}\" font-size=\"13\" fill=\"#333\">busiest {} s window</text>\n",
                 left + 180, ly - 10, busiest_colour, busiest_colour, left + 210, ly, format_seconds(window));
  if (binned_)
    fmt::format_to(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#666\">{} requests, in columns of "
        "{} s</text>\n",
        width - right, ly, count_, format_seconds(width_));

  for (std::size_t li = 0; li < lanes.size(); ++li) {
    const auto& lane = lanes[li];
    const int y0 = top + static_cast<int>(li) * (lane_height + lane_gap);
    const int base = y0 + lane_height - 6;
    fmt::format_to(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f6f4\" stroke=\"#ddd\"/>\n", left,
                   y0, plot_w, lane_height);
    fmt::format_to(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\" text-anchor=\"end\" fill=\"#222\">{}</text>\n",
        left - 10, y0 + 24, escape(lane.name));
    fmt::format_to(out,
                   "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#444\">{} through</text>\n",
                   left - 10, y0 + 42, lane.through);
    fmt::format_to(out,
                   "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#444\">{} refused</text>\n",
                   left - 10, y0 + 58, lane.refused);
    if (lane.busiest > 0) {
      const double x0 = px(lane.busiest_start);
      const double x1 = std::max(px(static_cast<i128>(lane.busiest_start) + window), x0 + 2);
      fmt::format_to(out,
                     "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.3\" "
                     "stroke=\"{}\"/>\n",
                     x0, y0 + 1, x1 - x0, lane_height - 2, busiest_colour, busiest_colour);
      fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" fill=\"{}\">{}{} in {} s{}</text>\n", x0 + 3,
                     y0 + 14, lane.over ? "#a11" : "#555", lane.busiest,
                     lane.units ? (lane.busiest == 1 ? " unit" : " units") : "", format_seconds(window),
                     lane.over ? " — over the limit" : "");
    }
    if (!binned_) {
      // Every request: a small square; several at one pixel stack upwards.
      std::vector<int> stack(static_cast<std::size_t>(width), 0);
      const int most = (lane_height - 22) / 5;
      for (std::size_t i = 0; i < times_.size(); ++i) {
        const double x = px(times_[i]);
        const auto col = static_cast<std::size_t>(std::clamp(static_cast<int>(x), 0, width - 1));
        const int level = stack[col]++;
        if (level >= most) continue;
        fmt::format_to(out, "<rect x=\"{:.1f}\" y=\"{}\" width=\"3\" height=\"4\" fill=\"{}\"/>\n", x - 1.5,
                       base - 4 - level * 5, admitted_[li][i] ? through_colour : refused_colour);
      }
    } else {
      // Columns: through from the baseline up, refused stacked on top.
      std::int64_t peak = 1;
      for (std::size_t i = 0; i < bin_count; ++i) peak = std::max(peak, through_[li][i] + refused_[li][i]);
      const double room = lane_height - 22;
      for (std::size_t i = 0; i < bin_count; ++i) {
        const i128 bt = static_cast<i128>(origin_) + static_cast<i128>(width_) * static_cast<i128>(i);
        if (bt > t1) break;
        const double x = px(bt);
        const double w = std::max(px(bt + width_) - x, 1.0);
        const double h_ok = room * static_cast<double>(through_[li][i]) / static_cast<double>(peak);
        const double h_no = room * static_cast<double>(refused_[li][i]) / static_cast<double>(peak);
        if (h_ok > 0)
          fmt::format_to(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>\n", x,
                         base - h_ok, w, h_ok, through_colour);
        if (h_no > 0)
          fmt::format_to(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>\n", x,
                         base - h_ok - h_no, w, h_no, refused_colour);
      }
    }
  }
  // Time axis.
  const int ay = top + static_cast<int>(lanes.size()) * (lane_height + lane_gap);
  fmt::format_to(out, "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444\"/>\n", left, ay, left + plot_w, ay);
  const tick step = nice_step(t1 - t0);
  for (i128 t = detail::ceil_div(t0, step) * step; t <= t1; t += step) {
    const double x = px(t);
    fmt::format_to(out, "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#444\"/>\n", x, ay, ay + 5);
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                   x, ay + 19, format_seconds(static_cast<tick>(t)));
  }
  fmt::format_to(out, "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#333\">time (s)</text>\n",
                 left + plot_w, ay + 38);
  fmt::format_to(out, "</svg>\n");
  return fmt::to_string(b);
}

}  // namespace sluice::cli
