"""Stop words per language: function words that carry no topic, removed from a query before lexical matching.

English (``words.STOP_WORDS``) applies to every query. A profile whose
lexical signal stems in another language (``lexical_stemmer``) also removes
that language's list below: short, hand-written lists of articles, pronouns,
prepositions, conjunctions and auxiliaries. Like the English list, they keep
words that change meaning (negations such as "nicht", "pas", "no"). A
Snowball language without a list here removes the English words only.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_LISTS = {
    "german": """der die das den dem des ein eine einer eines einem einen und oder aber ich du er sie es wir ihr
        mich mir dich dir sich uns euch ihm ihn ihnen sein seine ihre mein meine dein deine unser euer ist sind war
        waren bin bist sei hat habe hast haben hatte hatten wird werden wurde wurden in im an am auf aus bei mit
        nach von vom zu zum zur für über unter vor um als wie was wer wo wann dass ob wenn auch noch schon so da
        dann denn doch nur sehr""",
    "french": """le la les l un une des du de d et ou mais je tu il elle on nous vous ils elles me te se moi toi
        lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre vos est sont était étaient suis es sommes
        êtes ai as a avons avez ont avait été être avoir dans en au aux à sur sous par pour avec sans chez que qui
        quoi dont où quand comme si ce cet cette ces ça c qu j m n s t y aussi très""",
    "spanish": """el la los las lo un una unos unas y o pero yo tú él ella nosotros vosotros ellos ellas me te se
        nos os le les mi mis tu tus su sus nuestro nuestra es son era eran soy eres somos fue fueron ser estar está
        están estaba he has ha hemos han había haber de del al a en con por para sin sobre entre hasta desde que
        quien quién qué cuando cuándo donde dónde como cómo si este esta estos estas ese esa eso muy también ya""",
    "italian": """il lo la i gli le un uno una e o ma io tu lui lei noi voi loro mi ti si ci vi gli mio mia miei
        mie tuo tua suo sua nostro nostra è sono era erano sei siamo siete ho hai ha abbiamo avete hanno aveva
        essere avere di del della dei delle a al alla ai alle da dal dalla in nel nella con su sul sulla per tra fra
        che chi cosa quando dove come se questo questa questi quello quella molto anche già""",
    "portuguese": """o a os as um uma uns umas e ou mas eu tu ele ela nós vós eles elas me te se nos vos lhe lhes
        meu minha meus minhas teu tua seu sua seus suas nosso nossa é são era eram sou és somos foi foram ser estar
        está estão estava tenho tem temos têm tinha ter de do da dos das ao aos à às em no na nos nas com por pelo
        pela para sem sobre entre até desde que quem quando onde como se este esta isto esse essa isso muito também""",
    "dutch": """de het een en of maar ik jij je hij zij ze wij we jullie mij me jou hem haar ons hun mijn jouw
        zijn onze is zijn was waren ben bent heb hebt heeft hebben had hadden wordt worden werd in op aan uit bij
        met naar van voor over onder tot om als wat wie waar wanneer dat dit die deze ook nog al zo dan toch heel""",
}

BY_LANGUAGE: Mapping[str, frozenset[str]] = MappingProxyType(
    {language: frozenset(words.split()) for language, words in _LISTS.items()})
