// HTML for translation: the markup rules model-free, with identity
// "translations" (each word linked to itself), as Bergamot's html tests do;
// then the shipped model on 500 seeded random fragments around real
// sentences: the output parses, holds every tag and attribute of the input
// once, nests validly, and its text is the plain translation of the input's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mt/mt.h"
#include "mt/mt.hpp"
#include "test_util.hpp"
#include "text/html_markup.hpp"

using mt::detail::html::Document;
using mt::detail::html::Link;

namespace {

// Links of an identity translation, tokens as a tokenizer cuts them: each
// word, or each punctuation mark, with the spaces before it, to itself.
std::vector<Link> identity_links(std::string_view text) {
  const auto word_byte = [](char c) { return static_cast<unsigned char>(c) >= 0x80 || std::isalnum(static_cast<unsigned char>(c)); };
  std::vector<Link> links;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = at;
    while (end < text.size() && text[end] == ' ') ++end;
    if (end < text.size() && !word_byte(text[end])) {
      ++end;
    } else {
      while (end < text.size() && word_byte(text[end])) ++end;
    }
    links.push_back({at, end, at, end});
    at = end;
  }
  return links;
}

// The document with every block "translated" to itself.
std::string identity(std::string_view html) {
  const Document d = Document::parse(html);
  std::vector<std::string> texts(d.block_count());
  std::vector<std::vector<Link>> links(d.block_count());
  for (size_t b = 0; b < d.block_count(); ++b) {
    texts[b] = std::string(d.block_text(b));
    links[b] = identity_links(texts[b]);
  }
  return d.restore(texts, links);
}

// A session of the shipped model as HTML needs it (alignments), and the
// options that ask for HTML.
mt::Session html_session(int batch) {
  mt::SessionOptions so;
  so.max_batch_size = batch;
  so.alignments = true;
  return mt::test::shipped_session(so);
}

mt::ParagraphOptions html_format() {
  mt::ParagraphOptions html;
  html.format = mt::TextFormat::html;
  return html;
}

// Tags of a document in order: "<b>", "</b>", "<br/>" ... (comments and raw
// text skipped), and whether they nest validly.
struct Tags {
  std::vector<std::string> all;
  bool nested = true;
  std::string text;  // the text outside tags, entities as they are
};

Tags tags_of(std::string_view html) {
  Tags t;
  std::vector<std::string> open;
  size_t i = 0;
  while (i < html.size()) {
    if (html.compare(i, 4, "<!--") == 0) {
      const size_t end = html.find("-->", i);
      i = end == std::string_view::npos ? html.size() : end + 3;
      continue;
    }
    size_t end = html.size();
    if (html[i] == '<' && i + 1 < html.size() && (std::isalpha(static_cast<unsigned char>(html[i + 1])) || html[i + 1] == '/')) {
      end = i + 1;
      char quote = 0;
      for (; end < html.size(); ++end) {
        if (quote != 0) {
          if (html[end] == quote) quote = 0;
        } else if (html[end] == '"' || html[end] == '\'') {
          quote = html[end];
        } else if (html[end] == '>') {
          break;
        }
      }
    }
    if (end < html.size()) {  // a tag: it ends with '>' (else its '<' is text)
      const std::string tag(html.substr(i, end + 1 - i));
      t.all.push_back(tag);
      const bool closing = tag[1] == '/';
      size_t n = closing ? 2 : 1;
      std::string name;
      while (n < tag.size() && std::isalnum(static_cast<unsigned char>(tag[n]))) name += char(std::tolower(tag[n++]));
      const bool is_void = tag[tag.size() - 2] == '/' || name == "br" || name == "img" || name == "wbr" ||
                           name == "hr" || name == "input";
      if (closing) {
        if (open.empty() || open.back() != name) t.nested = false;
        if (!open.empty()) open.pop_back();
      } else if (!is_void) {
        open.push_back(name);
      }
      i = end + 1;
      if (!closing && (name == "script" || name == "style")) {  // raw text: not tags, not text
        const size_t close = html.find("</" + name, i);
        i = close == std::string_view::npos ? html.size() : close;
      }
      continue;
    }
    t.text.push_back(html[i++]);
  }
  if (!open.empty()) t.nested = false;
  return t;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("html: an identity translation gives the document back", "[html]") {
  const char* documents[] = {
      "<p>Hello <b>world</b>!</p>",
      "Hello<br>world <img src=\"a.png\" alt='x > y'/> end",
      "a &amp; b &lt; c &gt; d&nbsp;e",
      "<p>Run <code>ls &lt;x&gt; | <b>wc</b></code> now.</p><script>if (a < b) { x = '<p>'; }</script>",
      "<style>p > b { color: red }</style><!-- a <b> comment --><p>Text</p>",
      "<B>Bold</b> and <I class=\"Q\">italic</I>",
      "super<wbr>califragilistic",
      "<a href=\"x?a=1&amp;b=2\" title='q > r'>link</a> text",
      "text <b></b>",
      "<ul>\n  <li>One</li>\n  <li>Two <em>three</em></li>\n</ul>",
      "<!DOCTYPE html><html><head><title>A <title></title></head><body><p>x</p></body></html>",
      "<p>A <span><b>nested</b> span</span> here.</p>",
      "no markup at all",
      "",
  };
  for (const char* html : documents) {
    INFO(html);
    CHECK(identity(html) == html);
  }
}

TEST_CASE("html: block tags end blocks, inline tags do not, script, style and comments are not text", "[html]") {
  const Document d = Document::parse("<p>One <b>two</b>.</p><div>Three<br>four</div><script>x</script><!--y-->");
  std::vector<std::string> texts;
  for (size_t b = 0; b < d.block_count(); ++b) {
    if (d.translatable(b)) texts.emplace_back(d.block_text(b));
  }
  CHECK(texts == std::vector<std::string>{"One two.", "Threefour"});
  // Entities decoded, line breaks as spaces.
  const Document e = Document::parse("a&amp;b&#x41;&#66;&quot;\nc &unknown; &");
  REQUIRE(e.block_count() == 1);
  CHECK(e.block_text(0) == "a&bAB\" c &unknown; &");
  // Line breaks written as entities are spaces too: a block is one line of
  // the text translated (a "\n" in it would move the next blocks' text).
  const Document breaks = Document::parse("a&#10;b&#13;c&#x9;d&#12;e&#xA;f");
  REQUIRE(breaks.block_count() == 1);
  CHECK(breaks.block_text(0) == "a b c d e f");
  // A text "<" that opens no tag is text.
  const Document f = Document::parse("1 < 2 and a<b");
  CHECK(f.block_text(0) == "1 < 2 and a<b");
  CHECK(identity("1 < 2") == "1 &lt; 2");
}

TEST_CASE("html: inline markup moves with the words it wraps", "[html]") {
  // "A <b>red</b> car" -> "Ein Auto rot" with red -> rot, car -> Auto.
  const Document d = Document::parse("A <b>red</b> car");
  REQUIRE(d.block_text(0) == "A red car");
  const std::vector<std::string> texts = {"Ein Auto rot"};
  const std::vector<std::vector<Link>> links = {{{0, 1, 0, 3}, {1, 5, 8, 12}, {5, 9, 3, 8}}};
  CHECK(d.restore(texts, links) == "Ein Auto <b>rot</b>");
  // A tag whose words are linked to nothing stays after the word before it.
  const std::vector<std::vector<Link>> none = {{{0, 1, 0, 3}}};
  CHECK(d.restore(texts, none) == "Ein <b></b>Auto rot");
  // Crossing wishes are fitted: nested and in order, every tag once.
  const Document n = Document::parse("<i>a <b>b</b></i> <u>c</u>");
  const std::vector<std::string> t2 = {"c b a"};
  const std::vector<std::vector<Link>> l2 = {{{0, 1, 4, 5}, {1, 3, 2, 3}, {3, 5, 0, 1}}};
  const std::string out = n.restore(t2, l2);
  const Tags tags = tags_of(out);
  CHECK(tags.nested);
  CHECK(sorted(tags.all) == sorted(tags_of("<i>a <b>b</b></i> <u>c</u>").all));
  CHECK(tags.text == "c b a");
}

TEST_CASE("html: malformed input keeps every tag once, deep nesting does not recurse without bound", "[html]") {
  const char* documents[] = {"<b>unclosed and <i>more", "</i>stray close", "<p unterminated", "<b><i>crossed</b></i>",
                             "<!-- never closed", "<code>never closed", "<a href=\"no end>text"};
  for (const char* html : documents) {
    INFO(html);
    const std::string out = identity(html);
    CHECK(sorted(tags_of(out).all) == sorted(tags_of(html).all));
    CHECK(tags_of(out).text == tags_of(identity(html)).text);
  }
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "<b>";
  deep += "x";
  for (int i = 0; i < 10000; ++i) deep += "</b>";
  const std::string out = identity(deep);
  CHECK(sorted(tags_of(out).all) == sorted(tags_of(deep).all));
  std::string unclosed;
  for (int i = 0; i < 10000; ++i) unclosed += "<span>w ";
  CHECK(sorted(tags_of(identity(unclosed)).all) == sorted(tags_of(unclosed).all));
  std::string blocks;
  for (int i = 0; i < 10000; ++i) blocks += "<div>";
  CHECK(identity(blocks) == blocks);
}

namespace {

// A random fragment around a sentence: inline elements around words, void
// tags between them, block elements around the whole, attributes.
std::string random_fragment(std::mt19937& rng, const std::string& sentence) {
  static const char* inline_names[] = {"b", "i", "em", "strong", "span", "a", "u"};
  static const char* block_names[] = {"p", "div", "li", "td", "h2"};
  std::vector<std::string> words;
  size_t at = 0;
  while (at < sentence.size()) {
    const size_t space = sentence.find(' ', at);
    words.push_back(sentence.substr(at, space == std::string::npos ? std::string::npos : space - at));
    at = space == std::string::npos ? sentence.size() : space + 1;
  }
  std::string out;
  std::vector<std::string> open;
  const auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  for (size_t w = 0; w < words.size(); ++w) {
    if (w > 0) out += ' ';
    if (pick(4) == 0) {
      const std::string name = inline_names[pick(7)];
      out += "<" + name + (pick(2) ? " class=\"c" + std::to_string(pick(100)) + "\"" : "") + ">";
      open.push_back(name);
    }
    if (pick(12) == 0) out += "<br>";
    std::string word = words[w];
    if (word.find('&') != std::string::npos) word = "&amp;";
    out += word;
    if (!open.empty() && pick(3) == 0) {
      out += "</" + open.back() + ">";
      open.pop_back();
    }
  }
  while (!open.empty()) {
    out += "</" + open.back() + ">";
    open.pop_back();
  }
  if (pick(2) == 0) {
    const std::string name = block_names[pick(5)];
    out = "<" + name + " id=\"x" + std::to_string(pick(1000)) + "\">" + out + "</" + name + ">";
  }
  if (pick(5) == 0) out += "<!-- note --><script>var x = '<b>';</script>";
  return out;
}

}  // namespace

TEST_CASE("html with the shipped model: 500 random fragments keep their markup around the plain translation",
          "[html][model]") {
  mt::Session session = html_session(16);
  const std::vector<std::string> sentences = mt::test::read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  std::mt19937 rng(20261126);
  const mt::ParagraphOptions html = html_format();
  for (int i = 0; i < 500; ++i) {
    const std::string fragment = random_fragment(rng, sentences[size_t(i) % sentences.size()]);
    INFO(fragment);
    auto translated = session.translate_paragraphs(fragment, html, {});
    REQUIRE(translated.ok());
    const Tags in = tags_of(fragment), out = tags_of(translated->text);
    INFO(translated->text);
    CHECK(out.nested);
    CHECK(sorted(out.all) == sorted(in.all));
    // The text without tags is the plain translation of the input's text.
    const Document d = Document::parse(fragment);
    std::string expected;
    for (size_t b = 0; b < d.block_count(); ++b) {
      if (!d.translatable(b)) continue;
      auto plain = session.translate_paragraphs(d.block_text(b), {}, {});
      REQUIRE(plain.ok());
      expected += plain->text;
    }
    std::string got;
    mt::detail::html::append_escaped(expected, &got);
    CHECK(out.text == got);
  }
}

TEST_CASE("html with the shipped model: <b> lands on the word aligned to the bolded source word", "[html][model]") {
  mt::Session session = html_session(4);
  const mt::ParagraphOptions html = html_format();
  const std::pair<const char*, const char*> cases[] = {
      {"A <b>man</b> in a blue shirt is riding a bicycle down the street.", "<b>Mann</b>"},
      {"A man in a blue <b>shirt</b> is riding a bicycle down the street.", "<b>Hemd</b>"},
      {"A man in a blue shirt is riding a <b>bicycle</b> down the street.", "<b>Fahrrad</b>"},
      {"A man in a blue shirt is riding a bicycle down the <b>street</b>.", "<b>Straße</b>"},
      {"Two <b>children</b> are playing with a ball in the park.", "<b>Kinder</b>"},
      {"Two children are playing with a <b>ball</b> in the park.", "<b>Ball</b>"},
      {"A <b>woman</b> is reading a book on a bench.", "<b>Frau</b>"},
      {"A woman is reading a <b>book</b> on a bench.", "<b>Buch</b>"},
      {"A <i>dog</i> runs.", "<i>Hund</i>"},
      {"A man in a <a href=\"#\">blue shirt</a> is riding a bicycle down the street.", "<a href=\"#\">blauen Hemd</a>"},
  };
  int right = 0;
  for (const auto& [source, expected] : cases) {
    auto translated = session.translate_paragraphs(source, html, {});
    REQUIRE(translated.ok());
    INFO(source << " -> " << translated->text);
    const bool ok = translated->text.find(expected) != std::string::npos;
    if (!ok) WARN(source << " -> " << translated->text);
    right += ok;
  }
  CHECK(right >= 9);
}

TEST_CASE("html needs a session with alignments", "[html][model]") {
  mt::SessionOptions so;
  so.max_batch_size = 2;
  auto created = mt::Session::create(mt::test::shipped_int8_model(), so);
  REQUIRE(created.ok());
  mt::ParagraphOptions html;
  html.format = mt::TextFormat::html;
  auto refused = created->translate_paragraphs("<b>x</b>", html, {});
  CHECK(refused.status().code() == mt::Errc::invalid_argument);
  CHECK_THAT(refused.status().message(), Catch::Contains("alignments"));
}

TEST_CASE("html with the shipped model: a line break entity stays in its block", "[html][model]") {
  mt::Session session = html_session(4);
  const mt::ParagraphOptions html = html_format();
  auto spaced = session.translate_paragraphs("<p>A dog runs.</p><p>A cat sleeps.</p>", html, {});
  auto broken = session.translate_paragraphs("<p>A dog&#10;runs.</p><p>A cat sleeps.</p>", html, {});
  REQUIRE(spaced.ok());
  REQUIRE(broken.ok());
  CHECK(broken->text == spaced->text);
  // A null sink is refused before anything is translated, as in plain text.
  CHECK(session.translate_paragraphs("<p>A dog.</p>", html, {}, nullptr).code() == mt::Errc::invalid_argument);
}

TEST_CASE("C API: mt_translate_paragraphs with MT_FORMAT_HTML", "[html][c_api]") {
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(MT_MODELS_DIR "/en-de-tiny.int8.mtm", &model) == MT_OK);
  mt_session_options so;
  mt_session_options_init(&so);
  so.alignments = 1;
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, &so, &session) == MT_OK);
  mt_paragraph_options po;
  mt_paragraph_options_init(&po);
  CHECK(po.format == MT_FORMAT_PLAIN);
  std::string out;
  po.format = MT_FORMAT_HTML;
  po.user_data = &out;
  po.write_text = [](void* user, const char* bytes, size_t length) {
    static_cast<std::string*>(user)->append(bytes, length);
    return 0;
  };
  const std::string page = "<p>A <b>dog</b> runs.</p>";
  REQUIRE(mt_translate_paragraphs(session, page.data(), page.size(), &po, nullptr) == MT_OK);
  CHECK(out == "<p>Ein <b>Hund</b> rennt.</p>");
  po.format = 7;
  CHECK(mt_translate_paragraphs(session, page.data(), page.size(), &po, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  mt_session_free(session);
  mt_model_free(model);
}
