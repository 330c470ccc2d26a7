// An incremental parser of server-sent events (the WHATWG event-stream format) for the provider
// streams: bytes go in as TCP delivers them, split anywhere (inside a line, a CRLF or a UTF-8
// character), and whole events come out. Comment lines (`:`) are keep-alives and are dropped.

export interface ServerSentEvent {
  /** The `event:` field, `message` when absent. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  id?: string;
}

export class SseParser {
  readonly #decoder = new TextDecoder("utf-8");
  #buffer = "";
  /** A CR ended the last chunk: a LF opening the next one belongs to it. */
  #pendingCr = false;
  #event = "";
  #data: string[] = [];
  #id: string | undefined;

  /** Feeds bytes; answers the events they complete. */
  push(chunk: Uint8Array): ServerSentEvent[] {
    return this.#lines(this.#decoder.decode(chunk, { stream: true }));
  }

  /** The end of the stream: a last line without its newline is taken; an event without its blank line is not (as browsers do). */
  end(): ServerSentEvent[] {
    const events = this.#lines(this.#decoder.decode());
    if (this.#buffer !== "") {
      this.#field(this.#buffer);
      this.#buffer = "";
    }
    return events;
  }

  #lines(text: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let start = 0;
    if (this.#pendingCr && text.startsWith("\n")) start = 1;
    this.#pendingCr = false;
    let buffer = this.#buffer;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = buffer + text.slice(start, i);
      buffer = "";
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else this.#pendingCr = true;
      }
      start = i + 1;
      if (line === "") {
        const event = this.#dispatch();
        if (event) events.push(event);
      } else this.#field(line);
    }
    this.#buffer = buffer + text.slice(start);
    return events;
  }

  #field(line: string): void {
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.#data.push(value);
    else if (name === "event") this.#event = value;
    else if (name === "id" && !value.includes("\0")) this.#id = value;
  }

  #dispatch(): ServerSentEvent | undefined {
    const event = this.#data.length ? { event: this.#event || "message", data: this.#data.join("\n"), id: this.#id } : undefined;
    this.#data = [];
    this.#event = "";
    return event;
  }
}
