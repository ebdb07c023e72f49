import { read } from 'node:fs'
import { promisify } from 'node:util'
import { autoDetect, type BindingInterface, BindingsError, type LinuxPortBinding } from '@serialport/bindings-cpp'

const readAsync = promisify(read)

const detected = autoDetect() as BindingInterface
/** An open port of the Linux or macOS binding (the macOS one has the same fd and poller). */
type UnixPortBinding = Pick<LinuxPortBinding, 'fd' | 'isOpen' | 'poller' | 'read'>

/**
 * The platform's serial binding, except that on Linux and macOS a line whose other end hung up is
 * reported as lost.
 *
 * Written here because @serialport/bindings-cpp 13 does not: its unix read reads again at once when
 * read() gives 0 bytes. A terminal whose other end is gone (a pseudo-terminal whose master closed,
 * an adapter unplugged) gives 0 bytes to every read from then on, so the line turns a thread of
 * libuv's pool forever and never says it is gone; whether the hang-up shows as an error instead
 * depends on how it races the poll that woke the read. The line is opened with VMIN=1 (the
 * binding's default and ours), so a read of a live line gives at least a byte or EAGAIN: 0 bytes
 * means the other end is gone. This read is the library's, with that one case made an error, which
 * the stream takes as a disconnect (it closes the port with it).
 *
 * @example
 * new SerialPortStream({ path: '/dev/ttyUSB0', baudRate: 9600, binding: hangupAwareBinding })
 */
export const hangupAwareBinding: BindingInterface = {
  list: () => detected.list(),
  async open(options) {
    const port = await detected.open(options)
    if (process.platform !== 'win32') {
      const unix = port as unknown as UnixPortBinding
      unix.read = (buffer: Buffer, offset: number, length: number) => readUnixLine(unix, buffer, offset, length)
    }
    return port
  },
}

/** One read of an open unix line: waits for the line to be readable when nothing is there yet. */
async function readUnixLine(port: UnixPortBinding, buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }> {
  for (;;) {
    const fd = port.fd
    if (fd === null) throw new BindingsError('Port is not open', { canceled: true })
    try {
      const { bytesRead } = await readAsync(fd, buffer, offset, length, null)
      if (bytesRead === 0) throw Object.assign(new Error('the other end hung up'), { disconnect: true })
      return { bytesRead, buffer }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK' && code !== 'EINTR') throw error
      if (!port.isOpen) throw new BindingsError('Port is not open', { canceled: true })
      // The poller answers with the error it was cancelled with (a BindingsError, canceled) when the port closes.
      await new Promise<void>((resolve, reject) => port.poller.once('readable', (err?: Error | null) => (err ? reject(err) : resolve())))
    }
  }
}
