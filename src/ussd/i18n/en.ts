// English: every word a household sees. Short, plain, no programme jargon.
import { listed, type Catalogue } from './catalogue.ts';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export const en: Catalogue = {
  name: 'English',
  welcome: (app) => `Welcome to ${app}`,
  goodbye: (app) => `Thank you for using ${app}. Goodbye.`,
  home: { knowMore: 'Know More', account: 'Account Menu', services: 'Services', language: 'Language / Lugha', exit: 'Exit' },
  back: 'Back',
  more: 'More',
  skip: 'Skip',
  chooseLanguage: 'Choose your language',
  knowMore: 'Know More',
  topics: [
    {
      title: 'Clean cookstoves',
      body:
        'A clean cookstove burns fuel better than an open fire or an old stove. It cooks as fast with less fuel. ' +
        'It makes far less smoke in the kitchen. It protects the lungs of everyone at home, children most of all.',
    },
    {
      title: 'Saving fuel',
      body:
        'Dry fuel burns better: keep wood or charcoal under cover. Put a lid on the pot. Soak beans before cooking. ' +
        'Put out the fire as soon as the food is ready. Every kilogram saved is money and time saved.',
    },
    {
      title: 'The kitchen test',
      body:
        'The kitchen test measures how much fuel a home uses. Weigh the fuel you use each day and log it here for 3 days in a row. ' +
        'You can log today, yesterday and the day before. Then send your claim from the Services menu. We check it and tell you the result.',
    },
  ],
  accountMenu: 'Account Menu',
  accountOptions: ['Log in', 'Create account', 'Forgot Customer ID'],
  enterCustomerId: 'Enter your Customer ID',
  enterPin: 'Enter your 5-digit PIN',
  recoverPin: 'Enter your 5-digit PIN to see your Customer ID',
  customerIdShown: (id) => `Your Customer ID is ${id}. Keep it and your PIN safe.`,
  locked: 'Your account is locked after 3 wrong PINs. Visit your field agent or programme office to unlock it or get a new PIN.',
  enterName: 'Enter your full name',
  enterVillage: 'Enter your village (optional)',
  whichStove: 'Which stove do you cook on?',
  stoves: ['Old stove or open fire', 'New clean stove'],
  choosePin: 'Choose a 5-digit PIN',
  confirmPin: 'Enter the PIN again to confirm',
  accountCreated: (id) => `Account created. Your Customer ID is ${id}. Keep it and your PIN safe. Dial again and log in to record fuel use.`,
  services: 'Services',
  serviceOptions: ['Log fuel used', 'Review logged days', 'Send claim', 'Claim status', 'Change PIN'],
  whichDay: 'Fuel used on which day?',
  days: ['Today', 'Yesterday', 'The day before yesterday'],
  months: ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'],
  enterKg: (day) => `Enter kg of fuel used ${day.toLowerCase()} (e.g. 2.5)`,
  confirmKg: (kg, day, high) => `You entered ${kg} kg for ${day.toLowerCase()}. That is ${high ? 'more' : 'less'} than most homes use. Is it right?`,
  confirmOptions: ['Yes, save it', 'No, enter again'],
  review: (days, kg) => `Logged: ${plural(days, 'day', 'days')}, total ${kg} kg`,
  dayLine: (date, kg) => `${date}: ${kg} kg`,
  noDays: 'No days logged yet.',
  claimConfirm: (days, kg) => `Send a claim for ${plural(days, 'day', 'days')}, total ${kg} kg?`,
  send: 'Send',
  season: 'Which season is it?',
  seasons: ['Dry', 'Rainy', 'Cold'],
  events: 'Any special event on these days?',
  eventOptions: ['None', 'Festival or holiday', 'Funeral or ceremony'],
  work: 'Main work of your home?',
  workOptions: ['Farming', 'Trading', 'Paid work', 'Other'],
  claimSent: (ref, status) => `Claim sent. Reference ${ref}. Status: ${status}.`,
  claimStatus: (ref, status, date) => `Claim ${ref}${date ? ` of ${date}` : ''}: ${status}.`,
  statuses: { verified: 'Accepted', pending: 'Waiting', rejected: 'Not accepted' },
  reasons: {
    waitingOtherGroup: 'We are waiting for homes with the other stove to send the same days.',
    notReady: 'The programme cannot check claims yet. Your days are kept; send again later.',
    answersMissing: 'Some answers were missing. Please send the claim again.',
    daysInOtherClaim: 'Some of these days are already in another claim.',
    otherGroup: 'Your home is already listed with the other stove. Ask your field agent.',
    readingChanged: 'A reading changed while sending. Please send again.',
    other: 'Your claim could not be accepted. Ask your field agent.',
  },
  noClaim: 'No claim sent yet.',
  currentPin: 'Enter your current PIN',
  newPin: 'Enter a new 5-digit PIN',
  newPinAgain: 'Enter the new PIN again',
  notices: {
    invalidChoice: 'Invalid choice. Try again.',
    unknownCustomer: 'Customer ID not found. Check it and try again.',
    wrongPin: (left) => `Wrong PIN. ${plural(left, 'attempt', 'attempts')} left.`,
    pinBusy: 'Please try again in a moment.',
    pinFormat: 'PIN must be 5 digits.',
    pinTrivial: 'PIN too easy. Avoid repeated or consecutive digits.',
    pinMismatch: 'PINs did not match. Start again.',
    nameFormat: 'Name must be 2-40 letters.',
    villageFormat: 'Village must be 2-40 letters or numbers, starting with a letter.',
    kgFormat: (max) => `Enter kg as a number up to ${max}, e.g. 2.5`,
    fuelSaved: (kg, day) => `Saved ${kg} kg for ${day.toLowerCase()}.`,
    fuelUpdated: (kg, day) => `Changed ${day.toLowerCase()} to ${kg} kg.`,
    fuelClaimed: (day) => `${day} is already in a claim you sent; not changed.`,
    dayClaimed: (day) => `${day} is already in a claim you sent. Choose another day.`,
    logDays: (days, fromTomorrow, someLogged) => {
      const needs = fromTomorrow ? 'A new claim needs 3 days in a row not yet sent.' : 'A claim needs 3 days in a row.';
      if (fromTomorrow >= 3) return `${needs} Log each of the next 3 days, starting tomorrow, then send.`;
      const later = ['tomorrow', 'the day after tomorrow'].slice(0, fromTomorrow);
      return `${needs} Log ${listed([...days.map((d) => d.toLowerCase()), ...later], 'and')}${someLogged ? ' too' : ''}, then send.`;
    },
    claimNotSent: (reason) => `Claim not sent. ${reason}`,
    pinChanged: 'PIN changed.',
    pinUnchanged: 'That is already your PIN. Choose a different one.',
    loggedIn: (name) => (name ? `Welcome, ${name}.` : 'Welcome.'),
    noAccountForPhone: 'No account for this phone number.',
    phoneHasAccount: 'This phone number already has an account. Log in here.',
    languageSet: 'Language: English.',
  },
  failures: {
    invalidInput: 'Invalid input. Please try again.',
    unavailable: 'Service temporarily unavailable. Please try again later.',
    tooManyRequests: 'Too many requests. Please try again in a minute.',
  },
  expired: 'Your session has expired.',
  ended: 'This session has ended.',
  dialAgain: (code) => `Please dial ${code} again.`,
  dialAgainShort: 'Please dial again.',
};
