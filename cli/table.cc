#include "cli/table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"

namespace ristretto::cli {
namespace {

bool IsNumericCell(const std::string& cell) {
  if (cell.empty() || cell == "-") return true;
  double value = 0;
  // Percentages ("12.5%") count as numbers too.
  const std::string text =
      cell.back() == '%' ? cell.substr(0, cell.size() - 1) : cell;
  return absl::SimpleAtod(text, &value);
}

void AppendPadded(const std::string& cell, size_t width, bool right,
                  std::string* line) {
  const size_t pad = width - std::min(width, DisplayWidth(cell));
  if (right) line->append(pad, ' ');
  line->append(cell);
  if (!right) line->append(pad, ' ');
}

}  // namespace

size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (const char c : text) {
    // Count every byte except UTF-8 continuation bytes (10xxxxxx).
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  const size_t columns = header_.size();
  std::vector<size_t> width(columns);
  std::vector<bool> right(columns, !rows_.empty());
  for (size_t c = 0; c < columns; ++c) {
    width[c] = DisplayWidth(header_[c]);
    for (const auto& row : rows_) {
      width[c] = std::max(width[c], DisplayWidth(row[c]));
      if (!IsNumericCell(row[c])) right[c] = false;
    }
  }
  auto render_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      if (c > 0) line.append("  ");
      AppendPadded(cells[c], width[c], right[c], &line);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    line.push_back('\n');
    return line;
  };
  std::string out = render_line(header_);
  std::vector<std::string> rule(columns);
  for (size_t c = 0; c < columns; ++c) rule[c].assign(width[c], '-');
  out.append(render_line(rule));
  for (const auto& row : rows_) out.append(render_line(row));
  return out;
}

}  // namespace ristretto::cli
