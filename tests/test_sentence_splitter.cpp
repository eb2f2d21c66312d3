// The sentence splitter: a corpus of our own paragraphs split exactly as the
// reference Moses splitter splits them (tests/data/ssplit/make_expected.py
// made the expected file), the wrapped and lines modes, CJK full stops, the
// prefix lists, and hostile input.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mt/sentence_splitter.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  std::string line;
  while (std::getline(s, line)) out.push_back(line);
  return out;
}

// The sentences' texts.
std::vector<std::string> texts(std::string_view text, const std::vector<mt::SentenceRange>& ranges) {
  std::vector<std::string> out;
  for (const mt::SentenceRange& r : ranges) out.emplace_back(text.substr(r.begin, r.end - r.begin));
  return out;
}

std::vector<std::string> split(std::string_view text, mt::SplitMode mode, const mt::NonBreakingPrefixes* prefixes) {
  return texts(text, mt::SentenceSplitter(mode, prefixes).split(text));
}

// Ranges ordered, not overlapping, without spaces at either end.
void check_ranges(std::string_view text, const std::vector<mt::SentenceRange>& ranges) {
  size_t at = 0;
  size_t paragraph = 0;
  for (const mt::SentenceRange& r : ranges) {
    REQUIRE(r.begin >= at);
    REQUIRE(r.end > r.begin);
    REQUIRE(r.end <= text.size());
    REQUIRE(r.paragraph >= paragraph);
    const char first = text[r.begin], last = text[r.end - 1];
    CHECK(first != ' ');
    CHECK(first != '\n');
    CHECK(last != ' ');
    CHECK(last != '\n');
    at = r.end;
    paragraph = r.paragraph;
  }
}

const mt::NonBreakingPrefixes& english() {
  static const mt::NonBreakingPrefixes prefixes = *mt::NonBreakingPrefixes::builtin("en");
  return prefixes;
}

}  // namespace

TEST_CASE("our paragraphs split exactly as the reference splitter splits them", "[splitter]") {
  const std::string text = read_file(MT_SSPLIT_DIR "/paragraphs.en");
  const std::vector<std::string> expected_lines = lines_of(read_file(MT_SSPLIT_DIR "/paragraphs.en.expected"));
  // The expected file: each paragraph's sentences, then an empty line.
  std::vector<std::vector<std::string>> expected(1);
  for (const std::string& line : expected_lines) {
    if (line.empty()) {
      expected.emplace_back();
    } else {
      expected.back().push_back(line);
    }
  }
  expected.pop_back();
  const std::vector<std::string> paragraphs = lines_of(text);
  REQUIRE(paragraphs.size() == expected.size());
  REQUIRE(paragraphs.size() >= 30);

  const mt::SentenceSplitter splitter(mt::SplitMode::lines, &english());
  const std::vector<mt::SentenceRange> ranges = splitter.split(text);
  check_ranges(text, ranges);
  REQUIRE(ranges.size() >= 150);
  size_t k = 0;
  for (size_t p = 0; p < expected.size(); ++p) {
    for (const std::string& sentence : expected[p]) {
      INFO("paragraph " << p << ": " << paragraphs[p]);
      REQUIRE(k < ranges.size());
      CHECK(ranges[k].paragraph == p);
      CHECK(text.substr(ranges[k].begin, ranges[k].end - ranges[k].begin) == sentence);
      ++k;
    }
  }
  CHECK(k == ranges.size());
  CHECK(splitter.count(text) == ranges.size());

  SECTION("wrapped: the same paragraphs with line feeds inside and blank lines between") {
    std::string wrapped;
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      std::string paragraph = paragraphs[p];
      int spaces = 0;
      for (char& c : paragraph) {
        if (c == ' ' && ++spaces % 5 == 0) c = '\n';
      }
      wrapped += paragraph + (p % 3 == 0 ? "\n\n" : p % 3 == 1 ? "\n \n\n" : "\n\t\n");
    }
    const mt::SentenceSplitter wrap(mt::SplitMode::wrapped, &english());
    const std::vector<mt::SentenceRange> wrapped_ranges = wrap.split(wrapped);
    check_ranges(wrapped, wrapped_ranges);
    REQUIRE(wrapped_ranges.size() == ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      std::string got = wrapped.substr(wrapped_ranges[i].begin, wrapped_ranges[i].end - wrapped_ranges[i].begin);
      for (char& c : got) c = c == '\n' ? ' ' : c;
      CHECK(got == text.substr(ranges[i].begin, ranges[i].end - ranges[i].begin));
      CHECK(wrapped_ranges[i].paragraph == ranges[i].paragraph);
    }
  }
}

TEST_CASE("CJK full stops end sentences with no space after them, 、 and ， never", "[splitter]") {
  using V = std::vector<std::string>;
  const auto zh = [](std::string_view t) { return split(t, mt::SplitMode::lines, nullptr); };
  CHECK(zh("他来了。我走了！") == V{"他来了。", "我走了！"});
  CHECK(zh("你好吗？我很好。") == V{"你好吗？", "我很好。"});
  CHECK(zh("我买了苹果、梨和香蕉，然后回家了。") == V{"我买了苹果、梨和香蕉，然后回家了。"});
  CHECK(zh("真的吗？！太好了。") == V{"真的吗？！", "太好了。"});
  CHECK(zh("他说：“我明天来。”然后走了。") == V{"他说：“我明天来。”", "然后走了。"});
  CHECK(zh("「好。」她笑了。") == V{"「好。」", "她笑了。"});
  CHECK(zh("第一句。 第二句。") == V{"第一句。", "第二句。"});
  CHECK(zh("東京に行きました。楽しかったです。") == V{"東京に行きました。", "楽しかったです。"});
  CHECK(zh("价格是３．５元．很便宜。") == V{"价格是３．", "５元．", "很便宜。"});
  CHECK(zh("他来了。") == V{"他来了。"});
  CHECK(zh("他来了。。。我知道。") == V{"他来了。。。", "我知道。"});
  CHECK(zh("我用Python写代码。It works. 很好。") == V{"我用Python写代码。", "It works.", "很好。"});
}

TEST_CASE("wrapped mode: a single line feed is a space, a blank line ends a paragraph", "[splitter]") {
  using V = std::vector<std::string>;
  const auto w = [](std::string_view t) { return split(t, mt::SplitMode::wrapped, &english()); };
  CHECK(w("One line\nstill the same sentence? Yes.") == V{"One line\nstill the same sentence?", "Yes."});
  CHECK(w("First paragraph.\n\nSecond one.") == V{"First paragraph.", "Second one."});
  CHECK(w("a line\nthat wraps\nthree times") == V{"a line\nthat wraps\nthree times"});
  CHECK(w("\n\n  Leading blank lines.  \n\n") == V{"Leading blank lines."});
  CHECK(w("Ends here.\nNext sentence.") == V{"Ends here.", "Next sentence."});
  CHECK(w("Dr.\nSmith came.") == V{"Dr.\nSmith came."});
  CHECK(w("Para one\n \t \nPara two") == V{"Para one", "Para two"});
  CHECK(w("x\r\ny\r\n\r\nz") == V{"x\r\ny", "z"});
  CHECK(w("") == V{});
  CHECK(w("\n\n\n") == V{});
  const std::string text = "Aa.\n\n\n\nBb. Cc.\n\nDd.";
  const std::vector<mt::SentenceRange> r = mt::SentenceSplitter(mt::SplitMode::wrapped, &english()).split(text);
  REQUIRE(r.size() == 4);
  CHECK(r[0].paragraph == 0);
  CHECK(r[1].paragraph == 1);
  CHECK(r[2].paragraph == 1);
  CHECK(r[3].paragraph == 2);
}

TEST_CASE("lines mode: each line is a paragraph, empty lines counted", "[splitter]") {
  using V = std::vector<std::string>;
  const auto l = [](std::string_view t) { return split(t, mt::SplitMode::lines, &english()); };
  CHECK(l("One. Two.\nThree.") == V{"One.", "Two.", "Three."});
  CHECK(l("no stop at the end\nof this line") == V{"no stop at the end", "of this line"});
  CHECK(l("Dr.\nSmith") == V{"Dr.", "Smith"});
  CHECK(l("  spaced  out.  \n") == V{"spaced  out."});
  CHECK(l("crlf line.\r\nnext.\r\n") == V{"crlf line.", "next."});
  CHECK(l("\n\n") == V{});
  CHECK(l("He said \"Go.\" Then he left.") == V{"He said \"Go.\"", "Then he left."});
  CHECK(l("It costs 3.50 today.") == V{"It costs 3.50 today."});
  CHECK(l("See No. 5 and no. 6. Then stop.") == V{"See No. 5 and no. 6.", "Then stop."});
  CHECK(l("Tabs\tcount. As spaces.") == V{"Tabs\tcount.", "As spaces."});
  const std::string text = "Aa. Bb.\n\nCc.";
  const std::vector<mt::SentenceRange> r = mt::SentenceSplitter(mt::SplitMode::lines, &english()).split(text);
  REQUIRE(r.size() == 3);
  CHECK(r[0].paragraph == 0);
  CHECK(r[1].paragraph == 0);
  CHECK(r[2].paragraph == 2);
}

TEST_CASE("sentence mode: the whole text is one sentence", "[splitter]") {
  using V = std::vector<std::string>;
  const auto s = [](std::string_view t) { return split(t, mt::SplitMode::sentence, &english()); };
  CHECK(s("  One. Two.\nThree.  ") == V{"One. Two.\nThree."});
  CHECK(s(" \n ") == V{});
  CHECK(s("他来了。我走了！") == V{"他来了。我走了！"});
}

TEST_CASE("prefix lists: comments, numeric-only entries, duplicates, errors", "[splitter]") {
  const auto parsed = mt::NonBreakingPrefixes::parse("# a comment\nDr\n  Prof  # trailing\nNo #NUMERIC_ONLY#\n\nDr\n");
  REQUIRE(parsed.ok());
  CHECK(parsed->size() == 3);
  using K = mt::NonBreakingPrefixes::Kind;
  CHECK(parsed->find("Dr") == K::always);
  CHECK(parsed->find("Prof") == K::always);
  CHECK(parsed->find("No") == K::numeric_only);
  CHECK(parsed->find("dr") == K::none);
  CHECK(parsed->find("") == K::none);
  // The last line of a prefix listed twice counts.
  CHECK(mt::NonBreakingPrefixes::parse("No\nNo #NUMERIC_ONLY#\n")->find("No") == K::numeric_only);

  const auto too_long = mt::NonBreakingPrefixes::parse(std::string(300, 'x'));
  REQUIRE_FALSE(too_long.ok());
  CHECK(std::string(too_long.status().message()).find("longer than") != std::string::npos);
  REQUIRE_FALSE(mt::NonBreakingPrefixes::parse("Dr\n\xff\xfe\n").ok());

  for (const char* language : {"en", "de", "fr", "cs", "es"}) {
    INFO(language);
    const auto list = mt::NonBreakingPrefixes::builtin(language);
    REQUIRE(list.ok());
    CHECK(list->size() > 20);
    CHECK(!mt::NonBreakingPrefixes::builtin_list(language).empty());
  }
  CHECK(mt::NonBreakingPrefixes::builtin("zh")->size() == 0);
  const auto unknown = mt::NonBreakingPrefixes::builtin("xx");
  REQUIRE_FALSE(unknown.ok());
  CHECK(std::string(unknown.status().message()).find("en") != std::string::npos);

  // Each language's own abbreviations.
  using V = std::vector<std::string>;
  const auto de = *mt::NonBreakingPrefixes::builtin("de");
  CHECK(split("Das gilt z.B. für Äpfel. Birnen auch.", mt::SplitMode::lines, &de) ==
        V{"Das gilt z.B. für Äpfel.", "Birnen auch."});
  CHECK(split("Siehe Nr. 4 im Katalog. Danke.", mt::SplitMode::lines, &de) == V{"Siehe Nr. 4 im Katalog.", "Danke."});
  const auto cs = *mt::NonBreakingPrefixes::builtin("cs");
  CHECK(split("Přišel MUDr. Novák. Čekali jsme.", mt::SplitMode::lines, &cs) ==
        V{"Přišel MUDr. Novák.", "Čekali jsme."});
  const auto fr = *mt::NonBreakingPrefixes::builtin("fr");
  CHECK(split("J'ai vu Mme Dupont. Elle va bien.", mt::SplitMode::lines, &fr) ==
        V{"J'ai vu Mme Dupont.", "Elle va bien."});
  CHECK(split("Il est venu, etc. Puis il est parti.", mt::SplitMode::lines, &fr) ==
        V{"Il est venu, etc. Puis il est parti."});
  // Without a list every period before a capital ends a sentence.
  CHECK(split("Dr. Smith came.", mt::SplitMode::lines, nullptr) == V{"Dr.", "Smith came."});
}

TEST_CASE("split modes by name", "[splitter]") {
  CHECK(*mt::parse_split_mode("wrapped") == mt::SplitMode::wrapped);
  CHECK(*mt::parse_split_mode("lines") == mt::SplitMode::lines);
  CHECK(*mt::parse_split_mode("sentence") == mt::SplitMode::sentence);
  REQUIRE_FALSE(mt::parse_split_mode("paragraph").ok());
  CHECK(std::string(mt::split_mode_name(mt::SplitMode::wrapped)) == "wrapped");
}

TEST_CASE("hostile text: invalid UTF-8, lone marks, long runs", "[splitter]") {
  const std::vector<std::string> inputs = {
      "\xff\xfe. \x80\x80. A.",       "\xe4\xbd. \xe4. B",
      "\" \" \" . . . ? ! \" A",      std::string(10000, '.') + " A",
      std::string(10000, ' ') + ".",  "。。。！？）」",
      std::string(5000, ')') + "。A", "\xe3\x80\x82" + std::string(1, '\0') + "X. Y.",
  };
  for (const mt::SplitMode mode : {mt::SplitMode::sentence, mt::SplitMode::lines, mt::SplitMode::wrapped}) {
    for (const std::string& text : inputs) {
      const std::vector<mt::SentenceRange> r = mt::SentenceSplitter(mode, &english()).split(text);
      check_ranges(text, r);
    }
  }
}
