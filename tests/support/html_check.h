// A strict well-formedness check for the HTML the report writes (stricter than browsers, which
// repair anything): what a document must satisfy to be read the same by every parser.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace mixprec::testing {

// The problems found, each with its byte offset; empty when the document
// - starts with <!DOCTYPE html> and is valid UTF-8;
// - has one <html> holding <head> (with <meta charset> and <title>) then <body>;
// - closes every element it opens, in order (HTML void elements stay unclosed; `/>` only inside
//   <svg>, or on void elements); script and style hold raw text up to their end tag;
// - quotes every attribute value with ", uses each attribute once per element;
// - writes & only as an entity (&amp; &lt; &gt; &quot; &#39; &#NNN; &#xHH;) and < only to open
//   a tag or comment;
// - gives each id once, and every href="#x" names an id of the document.
std::vector<std::string> html_problems(const std::string& html);

// How many elements of each tag name (lower case) the document holds, in any part of it.
std::map<std::string, size_t> element_counts(const std::string& html);

// The text of the element whose id is `id`, from its start tag to its end tag (both included);
// empty when there is none.
std::string element_by_id(const std::string& html, const std::string& id);

}  // namespace mixprec::testing
