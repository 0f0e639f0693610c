// Kiswahili: kila neno ambalo familia inaona. Every word a household sees, in Swahili.
// How it was reviewed: by the developers, against the notes of issue #52 (from a household's walk
// through the journey in Kiswahili) and common Kenyan usage; no native-speaker panel or field
// staff has confirmed it yet, and they should before a wide roll-out. Choices made in that review:
// - a claim is a `ripoti` (a report of the fuel used; i/zi class: ripoti imetumwa), not `dai`
//   (reads as a debt or a demand) nor `ombi` (`maombi` also reads as prayers, and is this
//   catalogue's word for requests in failures.tooManyRequests);
// - the Customer ID is kept safe and the PIN told to no one (`Itunze pamoja na PIN yako` could
//   read as "keep it together with your PIN");
// - `Nambari ya kumbukumbu` for a reference, `Ulichoweka` for an input (not the rare `Ingizo`);
// - the object agrees with its noun: `kilo unayoiokoa`, `Kilo za leo zimebadilishwa kuwa 3`.
import { listed, type Catalogue } from './catalogue.ts';

export const sw: Catalogue = {
  name: 'Kiswahili',
  welcome: (app) => `Karibu ${app}`,
  goodbye: (app) => `Asante kwa kutumia ${app}. Kwaheri.`,
  home: { knowMore: 'Jifunze Zaidi', account: 'Akaunti', services: 'Huduma', language: 'Lugha / Language', exit: 'Toka' },
  back: 'Rudi',
  more: 'Zaidi',
  skip: 'Ruka',
  chooseLanguage: 'Chagua lugha yako',
  knowMore: 'Jifunze Zaidi',
  topics: [
    {
      title: 'Majiko safi',
      body:
        'Jiko safi huchoma kuni au mkaa vizuri kuliko moto wa mafiga au jiko la zamani. Hupika haraka kwa kuni kidogo. ' +
        'Hutoa moshi mdogo jikoni. Hulinda mapafu ya kila mtu nyumbani, hasa watoto.',
    },
    {
      title: 'Kuokoa kuni',
      body:
        'Kuni kavu huwaka vizuri zaidi: weka kuni au mkaa mahali pasipo na mvua. Funika sufuria. Loweka maharagwe kabla ya kupika. ' +
        'Zima moto chakula kikiiva. Kila kilo unayoiokoa ni pesa na muda.',
    },
    {
      title: 'Kipimo cha jikoni',
      body:
        'Kipimo cha jikoni kinaonyesha kiasi cha kuni au mkaa nyumba inachotumia. Pima kuni au mkaa unaotumia kila siku na urekodi hapa kwa siku 3 mfululizo. ' +
        'Unaweza kurekodi leo, jana na juzi. Kisha tuma ripoti kwenye menyu ya Huduma. Tutaikagua na kukuambia jibu.',
    },
  ],
  accountMenu: 'Akaunti',
  accountOptions: ['Ingia', 'Fungua akaunti', 'Nimesahau nambari ya mteja'],
  enterCustomerId: 'Weka nambari yako ya mteja',
  enterPin: 'Weka PIN yako ya tarakimu 5',
  recoverPin: 'Weka PIN yako ya tarakimu 5 kuona nambari yako ya mteja',
  customerIdShown: (id) => `Nambari yako ya mteja ni ${id}. Ihifadhi vizuri, na usimwambie mtu PIN yako.`,
  locked: 'Akaunti yako imefungwa baada ya PIN mbaya mara 3. Tembelea afisa wako au ofisi ya mradi ili uifungue au upate PIN mpya.',
  enterName: 'Weka jina lako kamili',
  enterVillage: 'Weka kijiji chako (si lazima)',
  whichStove: 'Unapikia jiko gani?',
  stoves: ['Jiko la zamani au mafiga', 'Jiko jipya banifu'],
  choosePin: 'Chagua PIN ya tarakimu 5',
  confirmPin: 'Weka PIN tena kuthibitisha',
  accountCreated: (id) => `Akaunti imefunguliwa. Nambari yako ya mteja ni ${id}. Ihifadhi vizuri, na usimwambie mtu PIN yako. Piga tena uingie kurekodi kuni au mkaa.`,
  services: 'Huduma',
  serviceOptions: ['Rekodi kuni au mkaa', 'Angalia siku ulizorekodi', 'Tuma ripoti', 'Hali ya ripoti', 'Badilisha PIN'],
  whichDay: 'Kuni au mkaa wa siku gani?',
  days: ['Leo', 'Jana', 'Juzi'],
  months: ['Januari', 'Februari', 'Machi', 'Aprili', 'Mei', 'Juni', 'Julai', 'Agosti', 'Septemba', 'Oktoba', 'Novemba', 'Desemba'],
  enterKg: (day) => `Weka kilo za kuni au mkaa zilizotumika ${day.toLowerCase()} (mf. 2.5)`,
  confirmKg: (kg, day, high) => `Umeweka kilo ${kg} kwa ${day.toLowerCase()}. Hiyo ni ${high ? 'zaidi' : 'chini'} ya matumizi ya nyumba nyingi. Ni sahihi?`,
  confirmOptions: ['Ndiyo, hifadhi', 'Hapana, weka tena'],
  review: (days, kg) => `Siku ulizorekodi: ${days}, jumla kilo ${kg}`,
  dayLine: (date, kg) => `${date}: kilo ${kg}`,
  noDays: 'Bado hujarekodi siku yoyote.',
  claimConfirm: (days, kg) => `Tuma ripoti ya siku ${days}, jumla kilo ${kg}?`,
  send: 'Tuma',
  season: 'Ni msimu gani sasa?',
  seasons: ['Kiangazi', 'Mvua', 'Baridi'],
  events: 'Kulikuwa na tukio maalum siku hizi?',
  eventOptions: ['Hapana', 'Sikukuu', 'Mazishi au sherehe'],
  work: 'Kazi kuu ya nyumba yako?',
  workOptions: ['Kilimo', 'Biashara', 'Kazi ya mshahara', 'Nyingine'],
  claimSent: (ref, status) => `Ripoti imetumwa. Nambari ya kumbukumbu ${ref}. Hali: ${status}.`,
  claimStatus: (ref, status, date) => `Ripoti ${ref}${date ? ` ya ${date}` : ''}: ${status}.`,
  statuses: { verified: 'Imekubaliwa', pending: 'Inasubiri', rejected: 'Haikukubaliwa' },
  reasons: {
    waitingOtherGroup: 'Tunasubiri nyumba zenye jiko lingine zitume siku hizo hizo.',
    notReady: 'Mradi bado hauwezi kukagua ripoti. Siku zako zimehifadhiwa; tuma tena baadaye.',
    answersMissing: 'Majibu mengine hayakuwepo. Tafadhali tuma ripoti tena.',
    daysInOtherClaim: 'Baadhi ya siku hizi tayari ziko kwenye ripoti nyingine.',
    otherGroup: 'Nyumba yako tayari imeorodheshwa na jiko lingine. Muulize afisa wako.',
    readingChanged: 'Rekodi ilibadilika wakati wa kutuma. Tafadhali tuma tena.',
    other: 'Ripoti yako haikuweza kukubaliwa. Muulize afisa wako.',
  },
  noClaim: 'Bado hujatuma ripoti.',
  currentPin: 'Weka PIN yako ya sasa',
  newPin: 'Weka PIN mpya ya tarakimu 5',
  newPinAgain: 'Weka PIN mpya tena',
  notices: {
    invalidChoice: 'Chaguo si sahihi. Jaribu tena.',
    unknownCustomer: 'Nambari ya mteja haipatikani. Iangalie ujaribu tena.',
    // Singular and plural differ in noun class: jaribio 1 limebaki, majaribio 2 yamebaki.
    wrongPin: (left) => (left === 1 ? 'PIN si sahihi. Jaribio 1 limebaki.' : `PIN si sahihi. Majaribio ${left} yamebaki.`),
    pinBusy: 'Tafadhali jaribu tena baada ya muda mfupi.',
    pinFormat: 'PIN lazima iwe tarakimu 5.',
    pinTrivial: 'PIN ni rahisi mno. Epuka tarakimu zinazojirudia au zinazofuatana.',
    pinMismatch: 'PIN hazilingani. Anza tena.',
    nameFormat: 'Jina liwe na herufi 2-40.',
    villageFormat: 'Kijiji kiwe na herufi au tarakimu 2-40, kianze na herufi.',
    kgFormat: (max) => `Weka kilo kwa namba hadi ${max}, mf. 2.5`,
    fuelSaved: (kg, day) => `Kilo ${kg} zimehifadhiwa kwa ${day.toLowerCase()}.`,
    fuelUpdated: (kg, day) => `Kilo za ${day.toLowerCase()} zimebadilishwa kuwa ${kg}.`,
    fuelClaimed: (day) => `${day} tayari iko kwenye ripoti uliyotuma; haijabadilishwa.`,
    dayClaimed: (day) => `${day} tayari iko kwenye ripoti uliyotuma. Chagua siku nyingine.`,
    logDays: (days, fromTomorrow, someLogged) => {
      const needs = fromTomorrow ? 'Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa.' : 'Ripoti inahitaji siku 3 mfululizo.';
      if (fromTomorrow >= 3) return `${needs} Weka kilo za siku 3 zijazo, kuanzia kesho, kisha tuma.`;
      const later = ['kesho', 'kesho kutwa'].slice(0, fromTomorrow);
      return `${needs} Weka kilo za ${listed([...days.map((d) => d.toLowerCase()), ...later], 'na')}${someLogged ? ' pia' : ''}, kisha tuma.`;
    },
    claimNotSent: (reason) => `Ripoti haikutumwa. ${reason}`,
    pinChanged: 'PIN imebadilishwa.',
    pinUnchanged: 'Hiyo tayari ni PIN yako. Chagua nyingine.',
    loggedIn: (name) => (name ? `Karibu, ${name}.` : 'Karibu.'),
    noAccountForPhone: 'Hakuna akaunti ya nambari hii ya simu.',
    phoneHasAccount: 'Nambari hii ya simu tayari ina akaunti. Ingia hapa.',
    languageSet: 'Lugha: Kiswahili.',
  },
  failures: {
    invalidInput: 'Ulichoweka si sahihi. Tafadhali jaribu tena.',
    unavailable: 'Huduma haipatikani kwa sasa. Tafadhali jaribu tena baadaye.',
    tooManyRequests: 'Maombi ni mengi mno. Tafadhali jaribu tena baada ya dakika moja.',
  },
  expired: 'Muda wa kipindi chako umekwisha.',
  ended: 'Kipindi hiki kimekwisha.',
  dialAgain: (code) => `Tafadhali piga ${code} tena.`,
  dialAgainShort: 'Tafadhali piga tena.',
};
