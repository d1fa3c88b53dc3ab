// Table: aligned, human-readable text tables for the `ristretto` command
// (study ls/show, dataset ls, leaderboards). Columns are padded to their
// widest cell (counted in UTF-8 code points); a column whose cells are all
// numbers (or "-" / empty) is right-aligned, every other column left-aligned.
// Not thread-safe.
#ifndef RISTRETTO_CLI_TABLE_H_
#define RISTRETTO_CLI_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace ristretto::cli {

class Table {
 public:
  // `header` names the columns; it fixes the column count.
  explicit Table(std::vector<std::string> header);

  // Appends a row. Missing cells are blank; cells beyond the header's
  // column count are dropped.
  void AddRow(std::vector<std::string> cells);

  size_t num_rows() const { return rows_.size(); }

  // The header, a rule of dashes, then the rows; columns separated by two
  // spaces, no trailing blanks, every line ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 `text`: the number of code points.
size_t DisplayWidth(const std::string& text);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_TABLE_H_
