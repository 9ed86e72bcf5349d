// Package docs holds guardd's operator documentation (the *.md files). Its
// test extracts every YAML and nginx snippet and checks them against the
// real tools: each YAML block must pass `guardd check` (blocks that are not a
// guardd configuration are fenced as yaml-other), each nginx block must pass
// `nginx -t` inside a configuration built around it, and every
// `log_format guardd` must be the one recommended format.
package docs
