// Package modelserver is a scripted model API for tests: a local HTTP server that plays the
// model for the real `claude` (Claude Code) and `codex` (Codex CLI) programs, so that the
// agent adapters and the watch loop are tested against the real agents with no network and no
// model.
//
// It serves the two wire formats the agents speak:
//
//   - the Anthropic Messages API, POST /v1/messages (Claude Code calls it as
//     /v1/messages?beta=true), streamed as server-sent events (message_start,
//     content_block_start, content_block_delta with text_delta or input_json_delta,
//     content_block_stop, message_delta, message_stop) or as one JSON message when the request
//     does not ask for a stream; plus /v1/messages/count_tokens and the HEAD / probe that
//     Claude Code sends first;
//   - the OpenAI Responses API, POST /v1/responses, streamed as server-sent events
//     (response.created, response.output_item.added, response.output_text.delta,
//     response.output_item.done, response.completed), which is what Codex uses for a model
//     provider with wire_api = "responses".
//
// A [Scenario] (YAML or JSON, see [Load]) is the script: every model request, whichever API
// it comes by, is answered with the next [Turn]: text, tool calls (write a file, edit a file,
// read a file, run a command, or any named tool with its input), or an HTTP error. A tool
// call is written once and translated for each agent: write is Claude Code's Write tool and,
// for Codex, an apply_patch command run through its exec_command tool; run is Bash or
// exec_command. A turn may say what the request must hold ([Expect]): which API, text that
// the user messages contain (the prompt), text that the results of the previous turn's tool
// calls contain. A request that breaks an expectation, or that comes when the script is used
// up, fails the test and gets an HTTP 400 answer, which the agents do not retry.
//
// Each answer reports token usage ([Turn].Usage; 100 input and 50 output tokens unless the
// turn says), in each API's own fields, so that tests can check what the agents sum from
// it. An error answer may carry headers and fields of its own ([Error]), as a 429 with
// retry-after or a usage limit with its reset time does.
//
// Every request is recorded ([Server.Requests]): the API, the model, the tools offered, the
// text of the user messages and the tool results, so that a test can check what the agent
// sent.
//
// The package does not run agents or know about the orchestrator: tests do that (see the
// real-agent tests in package agents).
package modelserver
