// Bytes written to a server as they are, for requests no HTTP client would send.
import { connect } from 'node:net';

/** Writes `bytes` to the server as they are and reads until it closes the connection. */
export function rawExchange(baseUrl: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

/**
 * Writes `head`, then body bytes (each `piece()`) until the server answers, `cap` bytes are sent
 * or it closes; resolves with what it answered and how many body bytes were sent, by `waitMs` at
 * the latest.
 */
export function sendUntilAnswered(baseUrl: string, head: string, piece: () => Buffer, cap: number, waitMs = 5000): Promise<{ answer: string; sent: number }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    let answer = '';
    let sent = 0;
    const socket = connect(Number(port), hostname);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer, sent });
    };
    const timer = setTimeout(finish, waitMs);
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('close', finish);
    // A reset once the server stops reading: what it answered before is what counts.
    socket.on('error', () => {});
    const pump = () => {
      while (!answer && !socket.destroyed && sent < cap) {
        const chunk = piece();
        sent += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    socket.once('connect', () => {
      socket.write(head);
      pump();
    });
  });
}
