import { ApiClient, SYSTEM } from './api-client.ts'
import { AppShell } from './app-shell.ts'
import { loginView } from './login-view.ts'
import { Notices } from './notices.ts'
import './styles.css'

const KEY_STORAGE = 'mimic.productKey'

const root = document.getElementById('app')!
const notices = new Notices()
let shell: AppShell | undefined

// Anything that slips through still ends up as a readable message, not a blank or frozen page.
window.addEventListener('error', (e) => notices.error(e.error ?? e.message, 'Unexpected error in the dashboard'))
window.addEventListener('unhandledrejection', (e) => notices.error(e.reason, 'Unexpected error in the dashboard'))

function showLogin(message?: string): void {
  shell?.dispose()
  shell = undefined
  sessionStorage.removeItem(KEY_STORAGE)
  root.replaceChildren(loginView({ onKey: start, message }).element, notices.element)
}

function start(key: string, open = false): void {
  sessionStorage.setItem(KEY_STORAGE, key)
  shell = new AppShell({ key, notices, onSignOut: showLogin, open })
  root.replaceChildren(shell.element, notices.element)
}

// A server without a product key answers without one: then there is no key to ask for.
const saved = sessionStorage.getItem(KEY_STORAGE)
if (saved) start(saved)
else
  void new ApiClient('').get(SYSTEM).then(
    () => start('', true),
    () => showLogin(),
  )
